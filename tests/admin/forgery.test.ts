/**
 * Admin mutations come from the app's own origin, as JSON, or not at all: a
 * signed-in admin's cookie sent by a page on another port (same site, so the
 * cookie goes along), by a form, without Origin and Sec-Fetch-Site, is
 * refused with 403 and nothing changes — the expired key stays, no audit
 * line is written. Reads are not affected.
 */
import { beforeAll, describe, expect, it, vi } from "vitest";
import { database } from "../../db/client";
import { checkAdminChange } from "../../server/admin/origin";
import { app } from "../../server/app";
import { createTrpcEndpoint } from "../../server/edge/trpc-endpoint";
import { newTenant, type TestTenant } from "../idempotency/fixture";
import { trpcError } from "../support/api";
import { callerWith, callerWithExactly, SAME_ORIGIN, seedKeys, sessionCookie } from "./support";

vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return { ...actual, env: { ...actual.env, ADMIN_PASSWORD: "test-admin-password" } };
});

let tenant: TestTenant;
beforeAll(async () => {
  tenant = await newTenant("admin-forgery");
});

async function state(tenantId: string) {
  const { sql } = database();
  const [row] = await sql<{ keys: number; audit: number }[]>`
    select (select count(*)::int from idempotency_keys where tenant_id = ${tenantId}) as keys,
           (select count(*)::int from admin_audit_log where tenant_id = ${tenantId}) as audit`;
  return row!;
}

const forged: [string, Record<string, string>][] = [
  ["another port of the same host", { origin: "http://app.test:8080" }],
  ["another site", { origin: "https://evil.example" }],
  ["Origin: null", { origin: "null" }],
  ["no Origin, Sec-Fetch-Site: same-site", { origin: "", "sec-fetch-site": "same-site" }],
  ["no Origin, Sec-Fetch-Site: cross-site", { origin: "", "sec-fetch-site": "cross-site" }],
  ["neither Origin nor Sec-Fetch-Site", { origin: "" }],
  ["a multipart form from the right origin", { "content-type": "multipart/form-data; boundary=x" }],
  ["a urlencoded form from the right origin", { "content-type": "application/x-www-form-urlencoded" }],
];

describe("admin mutations", () => {
  it.each(forged)("%s: 403, nothing purged or recovered, nothing audited", async (_label, headers) => {
    const t = await newTenant("admin-forgery-case");
    await seedKeys(t.id, [
      { key: "expired", expiresInSeconds: -60 },
      { key: "stuck", state: "in_progress", leaseSeconds: -5 },
    ]);
    const cleaned = Object.fromEntries(Object.entries({ ...SAME_ORIGIN, ...headers }).filter(([, v]) => v !== ""));
    const { sql } = database();
    const c = await callerWith({ cookie: await sessionCookie() });
    const forgedCaller = await callerWithExactly({ ...cleaned, cookie: await sessionCookie() });
    for (const call of [
      forgedCaller.admin.keys.purgeExpired({ tenantId: t.id }),
      forgedCaller.admin.keys.recover({ tenantId: t.id, key: "stuck" }),
    ]) {
      const error = await trpcError(call);
      expect(error.code).toBe("FORBIDDEN");
    }
    expect(await state(t.id)).toEqual({ keys: 2, audit: 0 });
    const [stuck] = await sql<
      { fence: number }[]
    >`select fence::int as fence from idempotency_keys where tenant_id = ${t.id} and key = 'stuck'`;
    expect(stuck!.fence).toBe(1);
    // The same session from the app's own origin may: the refusal was about the request, not the admin.
    await expect(c.admin.keys.purgeExpired({ tenantId: t.id })).resolves.toMatchObject({ deleted: 1 });
  });

  it("Sec-Fetch-Site: same-origin stands in for a missing Origin", async () => {
    const c = await callerWithExactly({
      host: "app.test",
      "sec-fetch-site": "same-origin",
      "content-type": "application/json",
      cookie: await sessionCookie(),
    });
    await expect(c.admin.keys.purgeExpired({ tenantId: tenant.id })).resolves.toMatchObject({ deleted: 0 });
  });

  it("reads need no Origin (a GET changes nothing)", async () => {
    const c = await callerWithExactly({ cookie: await sessionCookie() });
    await expect(c.admin.keys.list({ tenantId: tenant.id })).resolves.toEqual({ items: [], nextCursor: null });
  });
});

describe("admin mutations over HTTP", () => {
  it("meet the rule once, at the endpoint before the body is read: a 403 problem there, and adminProcedure does not ask again", async () => {
    const asked = vi.fn(checkAdminChange);
    const endpoint = createTrpcEndpoint({
      router: app.appRouter,
      createContext: async (options) => {
        const ctx = await app.createContextInner(options);
        return { ...ctx, auth: { ...ctx.auth, adminChange: asked } };
      },
      edge: (req, _procedures, handle) => handle(req),
    });
    const purge = async (headers: Record<string, string>) =>
      endpoint.POST(
        new Request("http://app.test/api/trpc/admin.keys.purgeExpired", {
          method: "POST",
          headers: { ...SAME_ORIGIN, cookie: await sessionCookie(), ...headers },
          body: JSON.stringify({ tenantId: tenant.id }),
        }),
      );
    expect((await purge({})).status).toBe(200);
    const refused = await purge({ origin: "http://app.test:8080" });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("content-type")).toBe("application/problem+json");
    expect(await refused.json()).toMatchObject({ type: "/problems/forbidden-origin" });
    expect(asked).not.toHaveBeenCalled();
  });
});
