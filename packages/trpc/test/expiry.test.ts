/**
 * Retention: an expired key is a new operation (a new generation, so a new
 * downstream key), and `deleteExpired` removes expired keys in batches while
 * writers keep going.
 */
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { deleteExpired } from "../src/index.js";
import { downstreamCallsOf, effectsOf, fresh, keyRow, openDatabase, post, serve, type Served } from "./harness.js";

let sql: Sql;
let app: Served;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql);
});
afterAll(async () => {
  await app?.close();
  await sql?.end({ timeout: 5 });
});

const expire = (key: string) =>
  sql`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = 't1' and key = ${key}`;

describe("a key older than the retention", () => {
  it("is treated as new: the work runs again, the old result is not replayed", async () => {
    const key = fresh("old");
    const first = await post(app.base, "deposit", key, { tag: key, amount: 4 });
    expect(first.status).toBe(200);
    await expire(key);
    const again = await post(app.base, "deposit", key, { tag: key, amount: 4 });
    expect(again).toMatchObject({ status: 200, replayed: false });
    expect(again.body).not.toBe(first.body);
    expect(await effectsOf(sql, key)).toEqual({ deposit: 2 });
    expect(await keyRow(sql, key)).toMatchObject({ state: "completed", fence: "2", replay_count: 0 });
  });

  it("may carry a different request, and a recoverable one gets a new downstream key", async () => {
    const key = fresh("reuse");
    expect((await post(app.base, "pay", key, { tag: key, amount: 4 })).status).toBe(200);
    await expire(key);
    expect((await post(app.base, "pay", key, { tag: key, amount: 5 })).status).toBe(200);
    const keys = await downstreamCallsOf(sql, key);
    expect(keys).toHaveLength(2);
    expect(keys[0]).not.toBe(keys[1]);
  });
});

describe("deleteExpired", () => {
  it("deletes every expired key and nothing else, in batches, while writers keep succeeding", async () => {
    const owner = fresh("cleanup");
    await sql`
      insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, expires_at, created_at)
      select ${owner}, 'expired-' || g, 'deposit', 'f', 'r', 'completed', 200, '{}', now() - interval '1 minute', now() - interval '25 hours'
      from generate_series(1, 30000) g`;
    await sql`
      insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, expires_at)
      select ${owner}, 'live-' || g, 'deposit', 'f', 'r', 'completed', 200, '{}', now() + interval '1 hour'
      from generate_series(1, 500) g`;

    const cleanup = deleteExpired(() => sql, undefined, { batchSize: 5000 });
    const writes = Array.from({ length: 8 }, async (_, w) => {
      let ok = 0;
      for (let i = 0; i < 25; i++) {
        const key = fresh(`writer${w}`);
        if ((await post(app.base, "deposit", key, { tag: owner, amount: 1 }, { "x-tenant": owner })).status === 200) ok++;
      }
      return ok;
    });
    const [deleted, ...oks] = await Promise.all([cleanup, ...writes]);
    expect(oks.reduce((a, b) => a + b, 0)).toBe(200);
    expect(deleted).toBeGreaterThanOrEqual(30000);
    const count = async (pattern: string) =>
      (await sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys where tenant_id = ${owner} and key like ${pattern}`)[0]!
        .n;
    expect(await count("expired-%")).toBe(0);
    expect(await count("live-%")).toBe(500);
    expect(await effectsOf(sql, owner, owner)).toEqual({ deposit: 200 });
  });
});
