/**
 * The admin dashboard: nothing without signing in; a checkout's key with its
 * hash, ledger entries and provider charge; replays counted live; a stopped
 * holder's lock recovered so a retry finishes once; filters and search kept
 * in the URL; and no serious accessibility violations. Each test works on a
 * tenant of its own and filters the dashboard to it.
 */
import { randomUUID } from "node:crypto";
import type { APIRequestContext, Page } from "@playwright/test";
import { drizzle } from "drizzle-orm/postgres-js";
import type { Sql } from "postgres";
import * as schema from "../../db/schema";
import { hashPassword } from "../../server/admin/password";
import { createTenant } from "../../server/tenants/service";
import { expect, test as base, type E2eTenant } from "../fixtures";
import { AdminKeyPage, AdminPage, adminSessionId } from "../pages/admin-page";
import { expectNoAxeViolations } from "../support/axe";
import { chargedButUnrecorded } from "../support/lab-crash";

const test = base.extend<{ admin: AdminPage; keyPage: AdminKeyPage }>({
  admin: async ({ page }, provide) => {
    await provide(new AdminPage(page));
  },
  keyPage: async ({ page }, provide) => {
    await provide(new AdminKeyPage(page));
  },
});

/** Long enough for the dashboard's 5-second refresh to come round after the event writer's 5-second replay count. */
const REFRESH = { timeout: 20_000 };

const newKey = (label: string) => `e2e-${label}-${randomUUID()}`;

async function signIn(admin: AdminPage, tenant: E2eTenant): Promise<void> {
  await admin.goto({ tenant: tenant.id });
  await admin.signIn();
  await expect(admin.heading).toBeVisible();
}

async function pay(api: APIRequestContext, key: string, amount = "12.00") {
  return api.post("/api/v1/payments", {
    data: { amount, currency: "EUR", destination: "acct_e2e_admin" },
    headers: { "idempotency-key": key },
  });
}

/** The lab's crash on the real stack (charged at the provider, not recorded), then its key's page, signed in. */
async function crashedKeyPage(admin: AdminPage, keyPage: AdminKeyPage, page: Page, db: Sql) {
  const paid = await chargedButUnrecorded(page.request, db);
  await admin.goto({ tenant: paid.tenantId });
  await admin.signIn();
  await expect(admin.heading).toBeVisible();
  await keyPage.goto(paid.tenantId, paid.key);
  return paid;
}

async function keyRow(db: Sql, tenantId: string, key: string) {
  const [row] = await db<{ state: string; fingerprint: string; procedure: string; request: string; fence: string; replay_count: number }[]>`
    select state, fingerprint, procedure, request, fence, replay_count from idempotency_keys where tenant_id = ${tenantId} and key = ${key}`;
  return row;
}

test("shows only the sign-in form until the admin password is given; tenant tokens never count", async ({
  admin,
  keyPage,
  page,
  api,
  tenant,
}) => {
  const key = newKey("private");
  expect((await pay(api, key)).status()).toBe(201);

  await admin.goto({ tenant: tenant.id });
  await expect(admin.signInHeading).toBeVisible();
  await expect(page.getByRole("table")).toHaveCount(0);
  await expect(page.getByText(key)).toHaveCount(0);
  await keyPage.goto(tenant.id, key);
  await expect(admin.signInHeading).toBeVisible();
  await expect(page.getByText(key)).toHaveCount(0);

  const asTenant = await api.get(`/api/trpc/admin.keys.list?input=${encodeURIComponent(JSON.stringify({ tenantId: tenant.id }))}`);
  expect(asTenant.status()).toBe(401);

  await admin.goto({ tenant: tenant.id });
  await admin.signIn("not-the-password");
  await expect(page.getByText("Sign-in failed. Check the operator name and password and try again.")).toBeVisible();
  await expect(admin.heading).toHaveCount(0);

  await admin.signIn();
  await expect(admin.heading).toBeVisible();
  await expect(admin.rowFor(key)).toHaveCount(1);
  const [cookie] = (await page.context().cookies()).filter((c) => c.name === "eo_admin");
  expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/" });
});

test("a checkout's key shows as completed with its hash, ledger entries and charge; a replay bumps the count", async ({
  admin,
  keyPage,
  page,
  api,
  db,
  tenant,
}) => {
  const products = (await (await api.get("/api/v1/products")).json()) as { data: { sku: string }[] };
  const key = newKey("checkout");
  const order = { items: [{ sku: products.data[0]!.sku, quantity: 2 }] };
  expect((await api.post("/api/v1/orders", { data: order, headers: { "idempotency-key": key } })).status()).toBe(201);
  const row = await keyRow(db, tenant.id, key);

  await signIn(admin, tenant);
  await expect(admin.cell(key, "state")).toHaveText("Completed");
  await expect(admin.cell(key, "hash")).toContainText(row!.fingerprint.slice(0, 12));
  await expect(admin.cell(key, "status")).toHaveText("201");
  await expect(admin.cell(key, "replays")).toHaveText("0");

  const replay = await api.post("/api/v1/orders", { data: order, headers: { "idempotency-key": key } });
  expect(replay.headers()["idempotent-replayed"]).toBe("true");
  // No reload: the dashboard refreshes itself and keeps its filter.
  await expect(admin.cell(key, "replays")).toHaveText("1", REFRESH);
  expect(new URL(page.url()).searchParams.get("tenant")).toBe(tenant.id);

  await admin.rowFor(key).getByRole("link", { name: key }).click();
  await expect(keyPage.requestHash).toHaveText(row!.fingerprint);
  await expect(keyPage.canonicalRequest).toContainText(row!.request);
  const ledger = await db<{ id: string }[]>`select id from ledger_entries where tenant_id = ${tenant.id} and idempotency_key = ${key}`;
  expect(ledger.length).toBeGreaterThanOrEqual(2);
  await expect(keyPage.ledgerRows()).toHaveCount(ledger.length);
  const [charge] = await db<
    { psp_charge_id: string }[]
  >`select psp_charge_id from payments where tenant_id = ${tenant.id} and idempotency_key = ${key}`;
  await expect(keyPage.chargesTable).toContainText(charge!.psp_charge_id);
  await expect(keyPage.timeline).toContainText("Replayed the stored result");
});

test("the health strip counts what the server did, from the same numbers /api/metrics serves", async ({ admin, page, api, tenant }) => {
  const key = newKey("health");
  for (let i = 0; i < 3; i++) expect((await pay(api, key)).status()).toBe(201);
  await signIn(admin, tenant);
  await expect(admin.healthTile("Database")).toContainText("up");
  // Two replays at least in the window: a rate above zero, never "0/s".
  await expect(admin.healthTile("Replayed")).toContainText(/^(?!0\/s)[\d.]+\/s/, REFRESH);
  await expect(admin.healthTile("Idempotent requests")).toContainText(/^(?!0\/s)[\d.]+\/s/);
  const scraped = await page.request.get("/api/metrics");
  expect(scraped.status()).toBe(200);
  expect(await scraped.text()).toMatch(/^idempotency_requests_total\{procedure="payments\.create",outcome="replayed"\} [1-9]/m);
});

test("a worker stopped dead right after the provider charged: the key page reads 'charged at the provider, not recorded yet' until a retry records it", async ({
  admin,
  keyPage,
  page,
  db,
}) => {
  // The lease (2 s) must run out before the retry, and the dashboard refreshes every 5 s; axe runs once.
  test.setTimeout(90_000);
  const paid = await crashedKeyPage(admin, keyPage, page, db);
  const standing = keyPage.chargesTable.getByTestId("payment-standing");
  await expect(standing).toHaveAttribute("data-standing", "charged_unrecorded");
  await expect(standing).toContainText("charged at the provider, not recorded yet");
  await expect(standing).toContainText("the completer or a retry with this key will record it");
  await expectNoAxeViolations(page);

  // After the lease, the retry takes the key over and records the provider's one charge.
  await expect.poll(async () => (await paid.retry()).status(), { timeout: 20_000, intervals: [1_000] }).toBe(200);
  await expect(standing).toHaveAttribute("data-standing", "charged", REFRESH);
  await expect(standing).toContainText("charged and recorded");
  const [payment] = await db<{ psp_charge_id: string }[]>`select psp_charge_id from payments where id = ${paid.paymentId}`;
  await expect(keyPage.chargesTable).toContainText(payment!.psp_charge_id);
});

test("a holder stopped mid-request: recover marks the key stale, and the retry finishes it exactly once", async ({
  admin,
  keyPage,
  api,
  db,
  tenant,
}) => {
  // The fingerprint of a real request, so the retry below is the same request as the stopped one.
  const template = newKey("template");
  expect((await pay(api, template, "7.00")).status()).toBe(201);
  const { procedure, fingerprint, request } = (await keyRow(db, tenant.id, template))!;
  const key = newKey("stopped");
  // What a holder that stopped right after claiming leaves behind: in progress, its lease running for another ten minutes.
  await db`
    insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, locked_until, expires_at)
    values (${tenant.id}, ${key}, ${procedure}, ${fingerprint}, ${request}, 'in_progress', now() + interval '10 minutes', now() + interval '1 day')`;

  await signIn(admin, tenant);
  await expect(admin.cell(key, "state")).toHaveText("In progress");

  await keyPage.goto(tenant.id, key);
  await keyPage.recoverButton.click();
  await expect(keyPage.page.getByText("Its holder may be working", { exact: false })).toBeVisible();
  await keyPage.confirmRecover.click();
  await expect(keyPage.page.getByRole("status").filter({ hasText: "Lock recovered" })).toBeVisible();
  await expect(keyPage.field("State")).toContainText("Stale");
  await expect(keyPage.auditLog).toContainText("Recovered the lock");

  await admin.goto({ tenant: tenant.id, stale: true });
  await expect(admin.keyRows).toHaveCount(1);
  await expect(admin.cell(key, "state")).toContainText("Stale");

  const retry = await pay(api, key, "7.00");
  expect(retry.status()).toBe(201);
  expect(retry.headers()["idempotent-replayed"]).toBeUndefined();
  const payments = await db<{ id: string }[]>`select id from payments where tenant_id = ${tenant.id} and idempotency_key = ${key}`;
  expect(payments).toHaveLength(1);
  expect(await keyRow(db, tenant.id, key)).toMatchObject({ state: "completed", fence: "2" });
  // The retry after it replays: the work ran once.
  expect((await pay(api, key, "7.00")).headers()["idempotent-replayed"]).toBe("true");

  await keyPage.goto(tenant.id, key);
  await expect(keyPage.field("State")).toHaveText("Completed");
});

test("filters, search and sort live in the URL and survive a reload", async ({ admin, page, api, db, tenant }) => {
  const [alpha, beta] = [newKey("alpha"), newKey("beta")];
  for (const key of [alpha, beta]) expect((await pay(api, key)).status()).toBe(201);
  const [stuck, old] = [newKey("gamma"), newKey("delta")];
  await db`
    insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, locked_until, response_status, response_body, expires_at)
    values (${tenant.id}, ${stuck}, 'payments.create', 'f0', 'r', 'in_progress', now() - interval '2 minutes', null, null, now() + interval '1 day'),
           (${tenant.id}, ${old}, 'payments.create', 'f1', 'r', 'completed', null, 201, '{}', now() - interval '1 second')`;

  await signIn(admin, tenant);
  await expect(admin.keyRows).toHaveCount(4);
  await expect(admin.count("Completed")).toContainText("2");
  await expect(admin.count("Stale")).toContainText("1");

  await admin.stateFilter.selectOption("completed");
  await expect(page).toHaveURL(/state=completed/);
  await expect(admin.keyRows).toHaveCount(2);
  await expect(admin.rowFor(old)).toHaveCount(0);

  await admin.search(admin.keySearch, "e2e-alpha");
  await expect(page).toHaveURL(/q=e2e-alpha/);
  await expect(admin.keyRows).toHaveCount(1);
  await expect(admin.rowFor(alpha)).toHaveCount(1);

  await page.reload();
  await expect(admin.keyRows).toHaveCount(1);
  await expect(admin.keySearch).toHaveValue("e2e-alpha");
  await expect(admin.stateFilter).toHaveValue("completed");

  await admin.page.getByRole("button", { name: "Clear filters" }).click();
  await expect(page).not.toHaveURL(/state=|q=|tenant=/);
  await admin.search(admin.tenantFilter, tenant.id);
  await expect(admin.keyRows).toHaveCount(4);

  await admin.staleOnly.check();
  await expect(admin.keyRows).toHaveCount(1);
  await expect(admin.cell(stuck, "state")).toContainText("Stale for 2m");
  await admin.staleOnly.uncheck();
  await admin.expiredOnly.check();
  await expect(admin.keyRows).toHaveCount(1);
  await expect(admin.cell(old, "state")).toHaveText("Expired");

  // Filtered to this tenant, the purge deletes this tenant's expired keys only.
  await page.getByRole("button", { name: "Purge expired keys…" }).click();
  await expect(page.getByText(`Delete every expired key of tenant ${tenant.id}?`)).toBeVisible();
  await page.getByRole("button", { name: "Purge now" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Deleted 1 expired key." })).toBeVisible();
  await expect(admin.keyRows).toHaveCount(0, REFRESH);
  await expect(page.getByRole("region", { name: "Audit log" })).toContainText("Purged expired keys");
  await admin.expiredOnly.uncheck();
  await expect(admin.keyRows).toHaveCount(3);

  await admin.page.getByRole("button", { name: /^Created/ }).click();
  await expect(page).toHaveURL(/sort=asc/);
  await expect(admin.keyRows.first()).toContainText(alpha);
});

test("has no accessibility violations signed out, on the dashboard and on a key", async ({ admin, keyPage, api, tenant }) => {
  // Three full axe runs (each several seconds on a busy machine) in one test.
  test.setTimeout(90_000);
  // Slashes, percent signs, ? and # are legal in a key and must survive the key page's URL.
  const key = `${newKey("axe")}/50%?#x`;
  expect((await pay(api, key)).status()).toBe(201);

  await admin.goto();
  await expect(admin.signInHeading).toBeVisible();
  await expectNoAxeViolations(admin.page);

  await signIn(admin, tenant);
  await expect(admin.rowFor(key)).toHaveCount(1);
  await expectNoAxeViolations(admin.page);

  await admin.rowFor(key).getByRole("link", { name: key }).click();
  await expect(keyPage.page.getByRole("heading", { level: 1 })).toHaveText(`Key ${key}`);
  await expect(keyPage.requestHash).toBeVisible();
  await expectNoAxeViolations(keyPage.page);
});

test("Resume now on a stale key: its result stays in view, in words, once the key is finished; the audit log says it in words", async ({
  admin,
  keyPage,
  page,
  db,
}) => {
  // The crash's lease (2 s) must run out and the key page refreshes every 5 s.
  test.setTimeout(90_000);
  const paid = await crashedKeyPage(admin, keyPage, page, db);
  // This server runs no completer: the page says so instead of promising an attempt.
  await expect(keyPage.field("Completer's next attempt")).toContainText("the completer is off on this server");
  const resume = page.getByRole("button", { name: "Resume now…" });
  await expect(resume).toBeVisible(REFRESH);
  await resume.click();
  await page.getByRole("button", { name: "Resume", exact: true }).click();

  const said = "Resume now: Completed by the completer (status 200).";
  // The key is finished, so its buttons go; the result stays.
  await expect(keyPage.recoverButton).toHaveCount(0, REFRESH);
  await expect(page.getByTestId("resume-result")).toHaveText(said);
  await expect(keyPage.field("Completed by")).toHaveText("the completer (its client has not come back)");
  const entry = keyPage.auditLog.getByRole("row").filter({ hasText: "Resumed now (ran the completer for the key)" });
  await expect(entry).toContainText("Completed by the completer (status 200).", REFRESH);
  const [payment] = await db<{ status: string }[]>`select status from payments where id = ${paid.paymentId}`;
  expect(payment?.status).toBe("succeeded");
});

test("the keys table fits its card at 1280 and 1920 px with 73- and 255-character keys and a 30-character tenant name: one line each, cut with an ellipsis, whole on hover", async ({
  admin,
  page,
  db,
  playwright,
  baseURL,
}) => {
  const name = `Wunderbar Lange Firma ${randomUUID().replaceAll("-", "")}`.slice(0, 30);
  const { tenant, token } = await createTenant(drizzle({ client: db, schema }), name);
  const key = `${randomUUID()}-${randomUUID()}`;
  const longest = `${randomUUID()}-`.padEnd(255, "k");
  expect([key.length, longest.length, name.length]).toEqual([73, 255, 30]);
  const api = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { authorization: `Bearer ${token}` } });
  for (const k of [key, longest]) expect((await pay(api, k)).status()).toBe(201);
  await api.dispose();

  await admin.goto({ tenant: tenant.id });
  await admin.signIn();
  for (const width of [1280, 1920]) {
    await page.setViewportSize({ width, height: 900 });
    await expect(admin.keyRows).toHaveCount(2);
    const { table, box } = await admin.keysTable.evaluate((t) => ({ table: t.scrollWidth, box: t.parentElement!.clientWidth }));
    expect(table, `at ${width} px`).toBeLessThanOrEqual(box);
    for (const k of [key, longest]) {
      const row = admin.rowFor(k);
      for (const [cell, whole] of [
        [row.getByRole("link", { name: k }), k],
        [row.getByRole("button", { name: new RegExp(name) }), name],
      ] as const) {
        // One line, cut with an ellipsis (the text is wider than its box), the whole value in the title.
        const shown = await cell.evaluate((el) => ({
          cut: el.scrollWidth > el.clientWidth,
          wrap: getComputedStyle(el).whiteSpace,
          overflow: getComputedStyle(el).textOverflow,
        }));
        expect(shown, `${whole.length} characters at ${width} px`).toEqual({ cut: true, wrap: "nowrap", overflow: "ellipsis" });
        await expect(cell).toHaveAttribute("title", new RegExp(`^${whole}`));
      }
    }
  }
});

test("the keys table fits its card at 1280 and 1920 px in its fullest state: every state and badge, 255-character keys, replays, for one tenant and for all", async ({
  admin,
  page,
  db,
  playwright,
  baseURL,
}) => {
  const name = `Wunderbar Lange Firma ${randomUUID().replaceAll("-", "")}`.slice(0, 30);
  const { tenant, token } = await createTenant(drizzle({ client: db, schema }), name);
  const keys = Array.from({ length: 7 }, (_, i) => `${i}-${randomUUID()}-`.padEnd(255, "k"));
  const api = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { authorization: `Bearer ${token}` } });
  for (const k of keys) expect((await pay(api, k)).status()).toBe(201);
  await api.dispose();
  const [replayed, byCompleter, stale, attention, failed, expired, leased] = keys;
  const inProgress = db`state = 'in_progress', response_status = null, response_body = null, completed_at = null`;
  const set = (key: string, change: ReturnType<typeof db>) =>
    db`update idempotency_keys set ${change} where tenant_id = ${tenant.id} and key = ${key}`;
  await set(replayed!, db`replay_count = 1234567, last_replayed_at = now()`);
  await set(byCompleter!, db`completed_by = 'completer', replay_count = 3, last_replayed_at = now()`);
  await set(
    stale!,
    db`${inProgress}, locked_until = now() - interval '3 hours 25 minutes', completer_attempts = 7, completer_error = 'the provider did not answer'`,
  );
  await set(
    attention!,
    db`${inProgress}, locked_until = now() - interval '2 days', completer_attempts = 8, completer_gave_up_at = now(), completer_error = 'the provider did not answer'`,
  );
  await set(failed!, db`state = 'failed', response_status = 402, replay_count = 99999, last_replayed_at = now()`);
  await set(expired!, db`expires_at = now() - interval '1 day', replay_count = 12, last_replayed_at = now() - interval '2 days'`);
  await set(leased!, db`${inProgress}, locked_until = now() + interval '10 minutes'`);

  await admin.goto({ tenant: tenant.id });
  await admin.signIn();
  for (const view of ["one tenant", "all tenants"] as const) {
    if (view === "all tenants") await admin.goto({});
    for (const width of [1280, 1920]) {
      await page.setViewportSize({ width, height: 900 });
      for (const k of keys) await expect(admin.rowFor(k)).toHaveCount(1);
      const fit = await admin.keysTable.evaluate((t) => {
        const card = t.closest("section")!.getBoundingClientRect();
        const spilled = [...t.querySelectorAll<HTMLTableCellElement>("th, td")]
          .filter((c) => c.scrollWidth > c.clientWidth + 1)
          .map((c) => `${c.cellIndex}: ${c.textContent?.slice(0, 40)}`);
        return {
          scroll: t.parentElement!.scrollWidth - t.parentElement!.clientWidth,
          right: t.getBoundingClientRect().right - card.right,
          spilled,
        };
      });
      expect(fit, `${view} at ${width} px`).toEqual({ scroll: 0, right: expect.any(Number), spilled: [] });
      expect(fit.right, `${view} at ${width} px`).toBeLessThanOrEqual(0);
    }
  }
  // The tiles say which of them overlap: here one key is stale and needs attention, and counts as in progress too.
  await admin.goto({ tenant: tenant.id });
  await expect(admin.count("Needs attention")).toContainText("of In progress:1");
  await expect(admin.count("Stale")).toContainText("of In progress:");
  await expect(page.getByTestId("counts-overlap")).toContainText("one key can be in all three");
});

test("an operator sees who is signed in and their own sessions, and ends another browser's: that browser is signed out at once", async ({
  admin,
  page,
  browser,
  baseURL,
  tenant,
}) => {
  const elsewhere = await browser.newContext({ baseURL });
  try {
    const otherAdmin = new AdminPage(await elsewhere.newPage());
    await signIn(otherAdmin, tenant);
    const otherId = await adminSessionId(elsewhere);
    await signIn(admin, tenant);
    const ownId = await adminSessionId(page.context());
    await expect(page.getByText("Signed in as demo (operator: may resume, release and purge, the demo operator)")).toBeVisible();

    const sessions = page.getByRole("region", { name: "Your sessions" });
    await expect(sessions.getByRole("row", { name: new RegExp(`${ownId}.*This browser`) })).toBeVisible();
    await expect(sessions.getByRole("button", { name: `End session ${ownId}` })).toHaveCount(0);
    await sessions.getByRole("button", { name: `End session ${otherId}` }).click();
    await expect(sessions.getByRole("cell", { name: otherId })).toHaveCount(0);

    await otherAdmin.goto({ tenant: tenant.id });
    await expect(otherAdmin.signInHeading).toBeVisible();
    await admin.goto({ tenant: tenant.id });
    await expect(admin.heading).toBeVisible();
  } finally {
    await elsewhere.close();
  }
});

test("the sign-in hint follows the operators that exist: the name may be left empty only while the demo operator is alone", async ({
  admin,
  page,
  db,
  tenant,
}) => {
  const alone = page.getByRole("note").filter({ hasText: "leave the operator name empty" });
  const named = page.getByRole("note").filter({ hasText: "sign in as the operator “demo”" });
  await admin.goto({ tenant: tenant.id });
  await expect(alone).toBeVisible();
  await expect(admin.operator).not.toHaveAttribute("required");
  // A second operator, as `npm run operator -- add` makes one (no one signs in as it here).
  const name = `e2e-viewer-${randomUUID().slice(0, 8)}`;
  await db`insert into admin_operators (name, role, password_hash) values (${name}, 'viewer', 'not-a-hash')`;
  try {
    await page.reload();
    await expect(named).toBeVisible();
    await expect(alone).toHaveCount(0);
    await expect(admin.operator).toHaveAttribute("required", "");
    await admin.signIn();
    await expect(admin.heading).toBeVisible();
  } finally {
    await db`delete from admin_operators where name = ${name}`;
  }
});

test("a viewer is shown no action it may not take: no purge on the dashboard, no recover or resume on a key an operator could act on", async ({
  admin,
  keyPage,
  page,
  db,
}) => {
  test.setTimeout(60_000);
  // A key an operator could recover: charged at the provider, not recorded, its holder gone (signs in as the demo operator).
  const paid = await crashedKeyPage(admin, keyPage, page, db);
  await expect(keyPage.recoverButton).toBeVisible();
  await admin.goto({ tenant: paid.tenantId });
  const purge = page.getByRole("button", { name: "Purge expired keys" });
  await expect(purge).toBeVisible();
  await page.context().clearCookies();
  const name = `e2e-viewer-${randomUUID().slice(0, 8)}`;
  const password = `viewer-${randomUUID()}`;
  await db`insert into admin_operators (name, role, password_hash) values (${name}, 'viewer', ${await hashPassword(password)})`;
  try {
    await admin.goto({ tenant: paid.tenantId });
    await admin.signIn(password, name);
    await expect(page.getByText(`Signed in as ${name} (viewer: reads only)`)).toBeVisible();
    await expect(purge).toHaveCount(0);
    await keyPage.goto(paid.tenantId, paid.key);
    await expect(keyPage.fields).toBeVisible();
    await expect(keyPage.recoverButton).toHaveCount(0);
    await expect(page.getByRole("button", { name: /Resume now/ })).toHaveCount(0);
    await expect(page.getByRole("region", { name: "Actions" })).toHaveCount(0);
  } finally {
    await db`delete from admin_operators where name = ${name}`;
  }
});
