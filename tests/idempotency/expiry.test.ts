/** Retention: expired keys are new operations; cleanup deletes them in batches while writers keep going. */
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { deleteExpired, eventLog } from "../../server/app";
import { count, downstreamCalls, effectsFor, ensureEffectsTable, keyRow, newTenant, post, uniqueKey, type TestTenant } from "./fixture";

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("expiry");
});

const expire = (tenantId: string, key: string) =>
  database().sql`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = ${tenantId} and key = ${key}`;

describe("a key older than the retention", () => {
  it("is treated as new: the work runs again, the old result is not replayed", async () => {
    const key = uniqueKey("old");
    const first = await post(tenant, "/t/atomic", { tag: key, amount: 4 }, key);
    expect(first.status).toBe(201);
    await expire(tenant.id, key);
    const again = await post(tenant, "/t/atomic", { tag: key, amount: 4 }, key);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
    expect(await again.text()).not.toBe(await first.text());
    expect(await effectsFor(tenant.id, key)).toHaveLength(2);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "2", replay_count: 0 });
  });

  it("may carry a different request, and a recoverable one gets a new downstream key", async () => {
    const key = uniqueKey("reuse");
    expect((await post(tenant, "/t/recoverable", { tag: key, amount: 4 }, key)).status).toBe(201);
    await expire(tenant.id, key);
    expect((await post(tenant, "/t/recoverable", { tag: key, amount: 5 }, key)).status).toBe(201);
    const keys = downstreamCalls.filter((c) => c.tag === key).map((c) => c.downstreamKey);
    expect(keys).toHaveLength(2);
    expect(keys[0]).not.toBe(keys[1]);
  });
});

describe("cleanup", () => {
  it("deletes every expired key and nothing else, in batches, while writers keep succeeding", async () => {
    const owner = await newTenant("cleanup");
    const { sql } = database();
    await sql`
      insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, expires_at, created_at)
      select ${owner.id}, 'expired-' || g, 'atomic', 'f', 'r', 'completed', 201, '{}', now() - interval '1 minute', now() - interval '25 hours'
      from generate_series(1, 30000) g`;
    await sql`
      insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, expires_at)
      select ${owner.id}, 'live-' || g, 'atomic', 'f', 'r', 'completed', 201, '{}', now() + interval '1 hour'
      from generate_series(1, 500) g`;

    const writes: Promise<number>[] = [];
    const writerKeys: string[] = [];
    const cleanup = deleteExpired({ batchSize: 5000 });
    for (let w = 0; w < 8; w++) {
      writes.push(
        (async () => {
          let ok = 0;
          for (let i = 0; i < 25; i++) {
            const key = uniqueKey(`writer${w}`);
            writerKeys.push(key);
            if ((await post(owner, "/t/atomic", { tag: key, amount: 1 }, key)).status === 201) ok++;
          }
          return ok;
        })(),
      );
    }
    const [deleted, ...oks] = await Promise.all([cleanup, ...writes]);
    expect(oks.reduce((a, b) => a + b, 0)).toBe(200);
    expect(deleted).toBeGreaterThanOrEqual(30000);
    expect(
      await count(sql`select count(*)::int as count from idempotency_keys where tenant_id = ${owner.id} and key like 'expired-%'`),
    ).toBe(0);
    expect(await count(sql`select count(*)::int as count from idempotency_keys where tenant_id = ${owner.id} and key like 'live-%'`)).toBe(
      500,
    );
    expect(await count(sql`select count(*)::int as count from test_effects where tenant_id = ${owner.id}`)).toBe(200);
  });
});

describe("events", () => {
  it("records replays, mismatches, releases and takeovers for the dashboard", async () => {
    const key = uniqueKey("events");
    await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key);
    await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key);
    await post(tenant, "/t/atomic", { tag: key, amount: 2 }, key);
    const boom = uniqueKey("events-boom");
    await post(tenant, "/t/atomic", { tag: boom, amount: 1, outcome: "boom" }, boom);
    await post(tenant, "/t/atomic", { tag: boom, amount: 1, outcome: "boom" }, boom);
    await eventLog.flush();
    const types = async (k: string) =>
      (
        await database().sql<
          { type: string }[]
        >`select type from idempotency_events where tenant_id = ${tenant.id} and key = ${k} order by at, id`
      ).map((r) => r.type);
    // Claimed and completed live on the key row itself; the events table keeps the rest. In time order, as the
    // dashboard reads them: replay counts and the other events reach the table by separate timers, so ids do not tell.
    expect(await types(key)).toEqual(["replayed", "mismatch"]);
    expect(await types(boom)).toEqual(["released", "takeover", "released"]);
  });

  it("counts a key's replays per minute: one row with how many, added to the key's replay count", async () => {
    const key = uniqueKey("replays");
    await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key);
    // Not across a minute boundary, so the four replays share one row.
    const second = new Date().getUTCSeconds();
    if (second > 55) await new Promise((r) => setTimeout(r, (61 - second) * 1000));
    for (let i = 0; i < 4; i++) await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key);
    await post(tenant, "/t/atomic", { tag: key, amount: 2 }, key);
    await eventLog.flush();
    const rows = await database().sql<{ type: string; count: number | null }[]>`
      select type, count from idempotency_events where tenant_id = ${tenant.id} and key = ${key} order by at, id`;
    expect(rows).toEqual([
      { type: "replayed", count: 4 },
      { type: "mismatch", count: null },
    ]);
    expect((await keyRow(tenant.id, key))!.replay_count).toBe(4);
  });
});
