/**
 * A duplicate while the first attempt is still running: with a wait budget
 * it waits for the holder, reports the wait (`waited`, with how long) and
 * replays; without one it answers 409 with a Retry-After at once, and the
 * replay later. The first attempt's uncommitted key row is played by a
 * transaction of the test's own where the atomic INSERT + COMMIT is meant.
 */
import type { ReservedSql, Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { fingerprint } from "../src/index.js";
import { caller, createApp, effectsOf, fresh, hooks, keyRow, openDatabase, park, post, recorder, serve, type Served } from "./harness.js";
import { arrivals, barrier, sleep, until } from "./waiting.js";

const WAITING = { waitMs: 5_000 };
const log = recorder();
const arrived = arrivals();
let sql: Sql;
let app: Served;
let noWait: Served;
let direct: ReturnType<typeof createApp>;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql, WAITING, { onEvent: log.onEvent, around: arrived.around });
  noWait = await serve(sql, { waitMs: 0 });
  direct = createApp(sql, WAITING, { onEvent: log.onEvent });
});
afterAll(async () => {
  await app?.close();
  await noWait?.close();
  await sql?.end({ timeout: 5 });
});

/** A completed key row for `{ tag: key, amount: 1 }` on `procedure`, as an attempt's final INSERT writes it (the caller commits it). */
async function insertKeyRow(q: ReservedSql, key: string, procedure: string) {
  const fp = fingerprint(procedure, { tag: key, amount: 1, outcome: "ok" });
  await q`insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, completed_at, expires_at)
    values ('t1', ${key}, ${procedure}, ${fp.hash}, ${fp.request}, 'completed', 200, ${JSON.stringify({ tag: key })}, now(), now() + interval '1 hour')`;
}

/** Sessions waiting for another transaction to end: an INSERT at a unique index whose key another transaction inserted and has not committed. */
async function transactionWaiters(): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pg_locks where locktype = 'transactionid' and not granted`;
  return row!.n;
}

/** The key's events of these types, in the order the sink got them. */
const eventsOf = (key: string, types: string[]) => log.of(key).filter((e) => types.includes(e.type));

describe("a duplicate while the first attempt is still running", () => {
  it("atomic, with a wait budget: a duplicate whose INSERT meets the first's uncommitted key row waits for it, says how long, and replays", async () => {
    const key = fresh("insert-wait");
    const holder = await sql.reserve();
    try {
      await holder`begin`;
      await insertKeyRow(holder, key, "deposit");
      const second = caller(direct, key).deposit({ tag: key, amount: 1 });
      await until(async () => (await transactionWaiters()) > 0);
      await sleep(50);
      await holder`commit`;
      expect(await second).toEqual({ tag: key });
    } finally {
      holder.release();
    }
    // Its own effect rolled back with its failed INSERT; it waited at the unique index, said so with how long, then replayed.
    expect(await effectsOf(sql, key)).toEqual({});
    const events = eventsOf(key, ["waited", "replayed"]);
    expect(events.map((e) => e.type)).toEqual(["waited", "replayed"]);
    expect(events[0]!.waitedMs).toBeGreaterThanOrEqual(50);
  });

  it("recoverable, with a wait budget: the duplicate waits for the holder, reports the wait, then replays", async () => {
    const key = fresh("lock-wait");
    const hold = park(key, "between");
    const first = post(app.base, "pay", key, { tag: key, amount: 1 });
    await hold.entered;
    const second = post(app.base, "pay", key, { tag: key, amount: 1 });
    await until(() => arrived.of(key) === 2);
    await sleep(100);
    hold.release();
    const [a, b] = await Promise.all([first, second]);
    expect(b).toEqual({ ...a, replayed: true });
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    const events = eventsOf(key, ["waited", "replayed"]);
    expect(events.map((e) => e.type)).toEqual(["waited", "replayed"]);
    expect(events[0]!.waitedMs).toBeGreaterThan(0);
    hooks.delete(key);
  });

  it("recoverable: each of several duplicates reports one wait, though it may wait for another duplicate's lock and then for the holder", async () => {
    const DUPLICATES = 6;
    for (let round = 0; round < 3; round++) {
      const key = fresh(`one-wait${round}`);
      const hold = park(key, "between");
      const first = post(app.base, "pay", key, { tag: key, amount: 1 });
      await hold.entered;
      const ready = barrier(DUPLICATES);
      const duplicates = Array.from({ length: DUPLICATES }, async () => {
        await ready();
        return post(app.base, "pay", key, { tag: key, amount: 1 });
      });
      await until(() => arrived.of(key) === 1 + DUPLICATES);
      await sleep(150);
      hold.release();
      const answers = await Promise.all([first, ...duplicates]);
      expect(answers.slice(1).map((a) => a.replayed)).toEqual(Array(DUPLICATES).fill(true));
      expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
      // Every duplicate waited (the holder was parked) and replayed.
      expect(eventsOf(key, ["waited"])).toHaveLength(DUPLICATES);
      expect(eventsOf(key, ["replayed"])).toHaveLength(DUPLICATES);
      hooks.delete(key);
    }
  });

  it("an attempt nobody holds the key against reports no wait", async () => {
    const key = fresh("no-wait");
    expect((await post(app.base, "deposit", key, { tag: key, amount: 1 })).status).toBe(200);
    expect((await post(app.base, "deposit", key, { tag: key, amount: 1 })).replayed).toBe(true);
    expect(eventsOf(key, ["waited", "replayed"]).map((e) => e.type)).toEqual(["replayed"]);
  });

  it("atomic, without a wait budget: a duplicate whose INSERT meets an uncommitted key row gets 409 with Retry-After at once, and later the replay", async () => {
    const key = fresh("insert-409");
    const first = await sql.reserve();
    try {
      // The first attempt has run and sent its INSERT; its COMMIT has not landed yet.
      await first`begin`;
      await first`insert into effects (tenant_id, key, tag, note, amount) values ('t1', ${key}, ${key}, 'deposit', 1)`;
      await insertKeyRow(first, key, "deposit");
      const dup = await post(noWait.base, "deposit", key, { tag: key, amount: 1 });
      expect(dup).toMatchObject({ status: 409, retryAfter: "1" });
      expect(JSON.parse(dup.body)).toMatchObject({ error: { data: { code: "CONFLICT", httpStatus: 409 } } });
      await first`commit`;
    } finally {
      first.release();
    }
    const later = await post(noWait.base, "deposit", key, { tag: key, amount: 1 });
    expect(later.replayed).toBe(true);
    expect(JSON.parse(later.body)).toEqual({ result: { data: { tag: key } } });
    expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
  });

  it("recoverable, without a wait budget: the committed in-progress key answers 409 until it completes", async () => {
    const key = fresh("held-409");
    const hold = park(key, "between");
    const first = post(noWait.base, "pay", key, { tag: key, amount: 1 });
    await hold.entered;
    expect(await keyRow(sql, key)).toMatchObject({ state: "in_progress", recovery_point: "recorded", lease_expired: false });
    expect((await post(noWait.base, "pay", key, { tag: key, amount: 1 })).status).toBe(409);
    hold.release();
    expect((await first).status).toBe(200);
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    hooks.delete(key);
  });
});
