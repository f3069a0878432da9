/**
 * The admin dashboard against a page on another loopback port, in the
 * browser of a signed-in admin (same site, so SameSite=Lax sends the cookie
 * along): its multipart and urlencoded forms and its no-cors fetches to the
 * admin mutations and to sign-in are refused with 403 and change nothing;
 * /admin cannot be framed; every page carries the security headers and still
 * works under its CSP; sign-out revokes the session for a copied cookie too.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import type { Sql } from "postgres";
import { expect, test as base } from "../fixtures";
import { AdminPage } from "../pages/admin-page";
import { BASE_URL } from "../support/settings";

type Attacker = { url: string; serve(html: string): void };

const test = base.extend<{ admin: AdminPage; attacker: Attacker }>({
  admin: async ({ page }, provide) => {
    await provide(new AdminPage(page));
  },
  /** A page of its own on another port of 127.0.0.1: same site as the app, another origin. */
  // Playwright reads a fixture's dependencies from this pattern; the server needs none.
  // eslint-disable-next-line no-empty-pattern
  attacker: async ({}, provide) => {
    let html = "";
    const server: Server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(html);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    await provide({ url: `http://127.0.0.1:${port}/`, serve: (page) => (html = page) });
    await new Promise<void>((resolve) => server.close(() => resolve()));
  },
});

const PURGE = `${BASE_URL}/api/trpc/admin.keys.purgeExpired`;
const RECOVER = `${BASE_URL}/api/trpc/admin.keys.recover`;

/** An expired key and a stale in-progress one: what purge and recover would change. */
async function seedTargets(db: Sql, tenantId: string) {
  await db`
    insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, locked_until, response_status, response_body, created_at, expires_at)
    values (${tenantId}, 'expired', 'payments.create', 'f1', 'r', 'completed', null, 201, '{}', now() - interval '2 days', now() - interval '1 day'),
           (${tenantId}, 'stuck', 'payments.create', 'f2', 'r', 'in_progress', now() - interval '1 minute', null, null, now() - interval '1 hour', now() + interval '1 day')`;
}

async function targets(db: Sql, tenantId: string) {
  const keys = await db<
    { key: string; fence: string }[]
  >`select key, fence from idempotency_keys where tenant_id = ${tenantId} order by key`;
  const [audit] = await db<{ n: string }[]>`select count(*) as n from admin_audit_log where tenant_id = ${tenantId}`;
  return { keys: keys.map((k) => `${k.key}:${k.fence}`), audit: Number(audit!.n) };
}

const form = (id: string, action: string, enctype: string, fields: Record<string, string>) =>
  `<form id="${id}" method="post" action="${action}" enctype="${enctype}">${Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${value}">`)
    .join("")}<button>${id}</button></form>`;

test("forms and no-cors requests from another port change nothing for a signed-in admin", async ({ admin, attacker, page, db, tenant }) => {
  await seedTargets(db, tenant.id);
  const before = await targets(db, tenant.id);
  expect(before).toEqual({ keys: ["expired:1", "stuck:1"], audit: 0 });

  await admin.goto({ tenant: tenant.id });
  await admin.signIn();
  await expect(admin.heading).toBeVisible();

  const forms: [string, string, string, Record<string, string>][] = [
    ["purge-multipart", PURGE, "multipart/form-data", { tenantId: tenant.id }],
    ["purge-urlencoded", PURGE, "application/x-www-form-urlencoded", { tenantId: tenant.id }],
    ["purge-text", PURGE, "text/plain", { '{"tenantId":"': `${tenant.id}"}` }],
    ["recover-multipart", RECOVER, "multipart/form-data", { tenantId: tenant.id, key: "stuck" }],
    ["sign-in-urlencoded", `${BASE_URL}/admin/session`, "application/x-www-form-urlencoded", { password: "guess" }],
  ];
  for (const [id, action, enctype, fields] of forms) {
    attacker.serve(`<!doctype html><title>win a prize</title>${form(id, action, enctype, fields)}`);
    await page.goto(attacker.url);
    const answer = page.waitForResponse((r) => r.url() === action && r.request().method() === "POST");
    await page.getByRole("button", { name: id }).click();
    expect((await answer).status(), id).toBe(403);
  }

  // Scripts on the other origin: opaque no-cors requests, with the cookie, as multipart and as "JSON" text.
  attacker.serve("<!doctype html><title>win a prize</title>");
  await page.goto(attacker.url);
  await page.evaluate(
    async ({ purge, tenantId }) => {
      const data = new FormData();
      data.set("tenantId", tenantId);
      await fetch(purge, { method: "POST", mode: "no-cors", credentials: "include", body: data });
      await fetch(purge, {
        method: "POST",
        mode: "no-cors",
        credentials: "include",
        headers: { "content-type": "text/plain" },
        body: JSON.stringify({ tenantId }),
      });
    },
    { purge: PURGE, tenantId: tenant.id },
  );

  expect(await targets(db, tenant.id)).toEqual(before);
  // The admin is still signed in: the refusals were about the requests, not the session.
  await admin.goto({ tenant: tenant.id });
  await expect(admin.heading).toBeVisible();
});

test("/admin cannot be framed by another page", async ({ attacker, page }) => {
  attacker.serve(`<!doctype html><title>frame</title><iframe title="framed admin" src="${BASE_URL}/admin"></iframe>`);
  await page.goto(attacker.url);
  await expect(page.frameLocator("iframe").getByRole("heading", { name: "Admin sign-in" })).toHaveCount(0);
});

test("every page carries the security headers and works under its CSP", async ({ page, request, admin }) => {
  for (const path of ["/", "/checkout", "/admin", "/docs", "/api/health", "/api/openapi.json"]) {
    const res = await request.get(path);
    const headers = res.headers();
    expect(headers["content-security-policy"], path).toContain("frame-ancestors 'none'");
    expect(headers["content-security-policy"], path).toContain("default-src 'self'");
    expect(headers["x-content-type-options"], path).toBe("nosniff");
    expect(headers["referrer-policy"], path).toBe("strict-origin-when-cross-origin");
  }
  const violations: string[] = [];
  page.on("console", (message) => {
    if (message.text().includes("Content Security Policy")) violations.push(message.text());
  });
  // The sign-in form is interactive (hydrated) and signs in under the policy.
  await admin.goto();
  await admin.signIn();
  await expect(admin.heading).toBeVisible();
  await page.goto("/checkout");
  await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
  expect(violations).toEqual([]);
});

test("sign-out revokes the session: a copied cookie stops working", async ({ admin, page, playwright, baseURL }) => {
  await admin.goto();
  await admin.signIn();
  await expect(admin.heading).toBeVisible();
  const [cookie] = (await page.context().cookies()).filter((c) => c.name === "eo_admin");
  const copy = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { cookie: `eo_admin=${cookie!.value}` } });
  const list = () =>
    copy.get(`/api/trpc/admin.keys.counts?input=${encodeURIComponent(JSON.stringify({ tenantId: `ten_${randomUUID()}` }))}`);
  expect((await list()).status()).toBe(200);

  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(admin.signInHeading).toBeVisible();
  expect((await list()).status()).toBe(401);
  await copy.dispose();
});
