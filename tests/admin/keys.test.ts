/**
 * Reading keys as an admin: filters, keyset pagination, counts, activity and
 * one key in full. Every test seeds its own tenants, so the rows it asserts
 * on are exactly the rows it made.
 */
import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { database } from "../../db/client";
import { app } from "../../server/app";
import { toProblem } from "../../server/errors";
import { trpcError } from "../support/api";
import { ensureEffectsTable, newTenant, post, uniqueKey } from "../idempotency/fixture";
import { adminCaller, seedKeys } from "./support";

vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return { ...actual, env: { ...actual.env, ADMIN_PASSWORD: "test-admin-password" } };
});

beforeAll(async () => {
  await ensureEffectsTable();
});

/** A tenant with one key in every situation, oldest first. */
async function tenantWithEveryState() {
  const tenant = await newTenant("admin-keys");
  await seedKeys(tenant.id, [
    { key: "done-1", state: "completed", ageSeconds: 600, replays: 2 },
    { key: "refused-1", state: "failed", ageSeconds: 500, procedure: "orders.create" },
    { key: "running-1", state: "in_progress", ageSeconds: 400, leaseSeconds: 30 },
    { key: "stuck-1", state: "in_progress", ageSeconds: 300, leaseSeconds: -90 },
    { key: "old-done", state: "completed", ageSeconds: 200, expiresInSeconds: -5 },
    { key: "old-stuck", state: "in_progress", ageSeconds: 100, leaseSeconds: -90, expiresInSeconds: -5 },
  ]);
  return tenant;
}

const keysOf = (page: { items: { key: string }[] }) => page.items.map((k) => k.key);

describe("admin.keys.list", () => {
  it("lists one tenant's keys newest first, with the derived state, stale marker and tenant name", async () => {
    const tenant = await tenantWithEveryState();
    const page = await (await adminCaller()).admin.keys.list({ tenantId: tenant.id });
    expect(keysOf(page)).toEqual(["old-stuck", "old-done", "stuck-1", "running-1", "refused-1", "done-1"]);
    expect(page.nextCursor).toBeNull();
    const byKey = new Map(page.items.map((k) => [k.key, k]));
    expect(byKey.get("done-1")).toMatchObject({
      state: "completed",
      stale: false,
      responseStatus: 201,
      replayCount: 2,
      tenantName: tenant.name,
    });
    expect(byKey.get("done-1")!.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(byKey.get("running-1")).toMatchObject({ state: "in_progress", stale: false, staleForMs: null });
    expect(byKey.get("stuck-1")).toMatchObject({ state: "in_progress", stale: true });
    expect(byKey.get("stuck-1")!.staleForMs).toBeGreaterThan(85_000);
    expect(byKey.get("old-done")).toMatchObject({ state: "expired", storedState: "completed" });
    expect(byKey.get("old-done")!.expiresInMs).toBeLessThan(0);
    // An expired key is expired, not stale: the next request treats it as new.
    expect(byKey.get("old-stuck")).toMatchObject({ state: "expired", stale: false });
  });

  it("filters by state, stale, expired, procedure and key prefix", async () => {
    const tenant = await tenantWithEveryState();
    const c = await adminCaller();
    const list = async (filters: Parameters<typeof c.admin.keys.list>[0]) =>
      keysOf(await c.admin.keys.list({ tenantId: tenant.id, ...filters }));
    expect(await list({ state: "completed" })).toEqual(["done-1"]);
    expect(await list({ state: "failed" })).toEqual(["refused-1"]);
    expect(await list({ state: "in_progress" })).toEqual(["stuck-1", "running-1"]);
    expect(await list({ state: "expired" })).toEqual(["old-stuck", "old-done"]);
    expect(await list({ expiredOnly: true })).toEqual(["old-stuck", "old-done"]);
    expect(await list({ state: "in_progress", expiredOnly: true })).toEqual(["old-stuck"]);
    expect(await list({ staleOnly: true })).toEqual(["stuck-1"]);
    expect(await list({ staleOnly: true, state: "completed" })).toEqual([]);
    expect(await list({ procedure: "orders.create" })).toEqual(["refused-1"]);
    expect(await list({ keyPrefix: "old-" })).toEqual(["old-stuck", "old-done"]);
    expect(await list({ keyPrefix: "old-", state: "completed", expiredOnly: true })).toEqual(["old-done"]);
  });

  it("matches a key prefix literally: % and _ are not wildcards", async () => {
    const tenant = await newTenant("admin-prefix");
    await seedKeys(tenant.id, [{ key: "a_b-1" }, { key: "axb-1" }, { key: "a%b-1" }, { key: "a\\b-1" }]);
    const c = await adminCaller();
    for (const [prefix, expected] of [
      ["a_", ["a_b-1"]],
      ["a%", ["a%b-1"]],
      ["a\\", ["a\\b-1"]],
      ["a", ["a\\b-1", "a%b-1", "axb-1", "a_b-1"]],
    ] as const) {
      const page = await c.admin.keys.list({ tenantId: tenant.id, keyPrefix: prefix });
      expect(keysOf(page).sort()).toEqual([...expected].sort());
    }
  });

  it("pages through every key exactly once, in either order, across states", async () => {
    const tenant = await newTenant("admin-pages");
    const seeds = Array.from({ length: 11 }, (_, i) => ({
      key: `page-${String(i).padStart(2, "0")}`,
      state: (["completed", "failed", "in_progress"] as const)[i % 3],
      // Two keys share each creation second, so the key breaks ties.
      ageSeconds: 100 - Math.floor(i / 2),
    }));
    await seedKeys(tenant.id, seeds);
    const c = await adminCaller();
    for (const sort of ["created_desc", "created_asc"] as const) {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await c.admin.keys.list({ tenantId: tenant.id, sort, limit: 4, cursor });
        seen.push(...keysOf(page));
        cursor = page.nextCursor ?? undefined;
        pages += 1;
      } while (cursor);
      expect(pages).toBe(3);
      const expected = seeds.map((s) => s.key);
      expect(seen).toEqual(sort === "created_asc" ? expected : [...expected].reverse());
    }
  });

  it("refuses a cursor it did not make", async () => {
    const error = await (await adminCaller()).admin.keys.list({ cursor: "not-a-cursor" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCError);
    expect((error as TRPCError).code).toBe("BAD_REQUEST");
  });

  // The shape was checked by a regex only: these passed it and reached `::timestamptz` or a text parameter, a 500.
  const cursorOf = (createdAt: string, key: string) => Buffer.from(JSON.stringify([createdAt, key]), "utf8").toString("base64url");
  it.each([
    ["month 13", cursorOf("2026-13-01T00:00:00.000000Z", "k")],
    ["year 0000", cursorOf("0000-01-01T00:00:00.000000Z", "k")],
    ["February 30", cursorOf("2026-02-30T00:00:00.000000Z", "k")],
    ["hour 24", cursorOf("2026-01-01T24:00:00.000000Z", "k")],
    ["a NUL in the key", cursorOf("2026-01-01T00:00:00.000000Z", "a\u0000b")],
    ["a control character in the key", cursorOf("2026-01-01T00:00:00.000000Z", "a\u001bb")],
    ["an empty key", cursorOf("2026-01-01T00:00:00.000000Z", "")],
    ["a key over 255 characters", cursorOf("2026-01-01T00:00:00.000000Z", "k".repeat(256))],
  ])("refuses a cursor with %s: a 400 problem naming the cursor", async (_label, cursor) => {
    const error = await trpcError((await adminCaller()).admin.keys.list({ cursor }));
    expect(error.code).toBe("BAD_REQUEST");
    expect(toProblem(error)).toMatchObject({
      type: "/problems/validation",
      status: 400,
      errors: [{ field: "cursor", message: "is not a cursor this endpoint returned" }],
    });
  });

  it("takes a well-formed cursor it could have made", async () => {
    const tenant = await tenantWithEveryState();
    const page = await (await adminCaller()).admin.keys.list({ tenantId: tenant.id, cursor: cursorOf("9999-12-31T23:59:59.999999Z", "~") });
    expect(keysOf(page)).toHaveLength(6);
  });
});

describe("admin.keys.counts", () => {
  it("counts one tenant's keys exactly, per state as shown", async () => {
    const tenant = await tenantWithEveryState();
    const counts = await (await adminCaller()).admin.keys.counts({ tenantId: tenant.id });
    const exact = (value: number) => ({ value, kind: "exact" });
    expect(counts).toEqual({
      in_progress: exact(2),
      completed: exact(1),
      failed: exact(1),
      expired: exact(2),
      stale: exact(1),
      needs_attention: exact(0),
    });
  });

  it("estimates large states across all tenants from the statistics, and counts small ones", async () => {
    const tenant = await newTenant("admin-many");
    const { sql } = database();
    await sql`
      insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, expires_at)
      select ${tenant.id}, 'bulk-' || g, 'payments.create', 'f', 'r', 'completed', 201, '{}', now() + interval '1 hour'
      from generate_series(1, 12000) g`;
    await sql`analyze idempotency_keys`;
    const counts = await (await adminCaller()).admin.keys.counts({});
    const [actual] = await sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys where state = 'completed'`;
    expect(counts.completed.kind).toBe("estimate");
    expect(counts.completed.value).toBeGreaterThan(actual!.n * 0.8);
    expect(counts.completed.value).toBeLessThan(actual!.n * 1.2);
    expect(["exact", "at_least"]).toContain(counts.expired.kind);
    expect(["exact", "at_least"]).toContain(counts.stale.kind);
  });
});

describe("admin.keys.activity and admin.keys.get", () => {
  it("show what a key did: replays and mismatches per minute, and its timeline", async () => {
    const tenant = await newTenant("admin-activity");
    const key = uniqueKey("activity");
    expect((await post(tenant, "/t/atomic", { tag: key, amount: 3 }, key)).status).toBe(201);
    for (let i = 0; i < 3; i++)
      expect((await post(tenant, "/t/atomic", { tag: key, amount: 3 }, key)).headers.get("idempotent-replayed")).toBe("true");
    expect((await post(tenant, "/t/atomic", { tag: key, amount: 4 }, key)).status).toBe(422);
    await app.eventLog.flush();

    const c = await adminCaller();
    const minutes = await c.admin.keys.activity({ tenantId: tenant.id });
    expect(minutes).toHaveLength(60);
    const total = (type: "replayed" | "mismatch" | "conflict" | "takeover") => minutes.reduce((n, m) => n + m[type], 0);
    expect([total("replayed"), total("mismatch"), total("conflict"), total("takeover")]).toEqual([3, 1, 0, 0]);

    const { key: detail, timeline } = await c.admin.keys.get({ tenantId: tenant.id, key });
    expect(detail).toMatchObject({ state: "completed", replayCount: 3, responseStatus: 201, tenantName: tenant.name });
    expect(detail.request).toBe(`atomic\n{"amount":3,"outcome":"ok","tag":"${key}"}`);
    expect(JSON.parse(detail.responseBody!)).toMatchObject({ tag: key, amount: 3 });
    expect(timeline.map((e) => e.type)).toEqual(["claimed", "completed", "replayed", "mismatch"]);
    // Replays are written per key every few seconds: the one line says how many it stands for.
    expect(timeline.find((e) => e.type === "replayed")?.count).toBe(3);
  });

  it("lists the ledger entries and provider charges the key caused, and nothing of other keys or tenants", async () => {
    const tenant = await newTenant("admin-caused");
    const other = await newTenant("admin-caused-other");
    const key = uniqueKey("caused");
    await seedKeys(tenant.id, [{ key }]);
    await seedKeys(other.id, [{ key }]);
    const { sql } = database();
    const payment = `pay_${key}`;
    for (const [tenantId, id, charge] of [
      [tenant.id, payment, "ch_123"],
      [other.id, `${payment}_other`, "ch_999"],
    ] as const) {
      await sql`insert into payments (id, tenant_id, status, amount_minor, currency, destination, capture_method, amount_captured_minor, psp_charge_id, idempotency_key)
                values (${id}, ${tenantId}, 'succeeded', 2500, 'EUR', 'acct_x', 'automatic', 2500, ${charge}, ${key})`;
      await sql`insert into ledger_entries (id, tenant_id, transaction_id, ledger_account, direction, amount_minor, currency, idempotency_key, payment_id)
                values (${`le_${id}_d`}, ${tenantId}, ${`tx_${id}`}, 'psp_clearing', 'debit', 2500, 'EUR', ${key}, ${id}),
                       (${`le_${id}_c`}, ${tenantId}, ${`tx_${id}`}, 'sales', 'credit', 2500, 'EUR', ${key}, ${id})`;
    }
    const { ledger, payments } = await (await adminCaller()).admin.keys.get({ tenantId: tenant.id, key });
    expect(payments).toEqual([
      expect.objectContaining({ id: payment, pspChargeId: "ch_123", amount: "25.00", currency: "EUR", status: "succeeded" }),
    ]);
    expect(ledger.map((e) => [e.ledgerAccount, e.direction, e.amount, e.paymentId])).toEqual([
      ["psp_clearing", "debit", "25.00", payment],
      ["sales", "credit", "25.00", payment],
    ]);
  });

  it("answers NOT_FOUND for a key that does not exist", async () => {
    const error = await (await adminCaller()).admin.keys.get({ tenantId: "ten_nobody", key: "nothing" }).catch((e: unknown) => e);
    expect((error as TRPCError).code).toBe("NOT_FOUND");
  });
});
