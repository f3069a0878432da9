/**
 * Concurrent duplicates. Each burst is N calls with the same key, released
 * together by a barrier, each on its own pooled connection (the pool is
 * warmed first so connection set-up does not stagger the start), repeated
 * with fresh keys; executions are counted in the database.
 */
import { fingerprint } from "@exactly-once/trpc";
import type { ReservedSql } from "postgres";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { eventLog } from "../../server/app";
import {
  barrier,
  caller,
  effectsFor,
  ensureEffectsTable,
  hooks,
  keyRow,
  newTenant,
  park,
  post,
  uniqueKey,
  type TestTenant,
} from "./fixture";

const BURST = 20;
const REPETITIONS = 50;

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("bursts");
  // Warm the pool: every burst member then starts on an open connection.
  await Promise.all(Array.from({ length: 30 }, () => database().sql`select pg_sleep(0.01)`));
});

/** A completed key row for `{ tag: key, amount: 1 }` on `procedure`, as an attempt's final INSERT writes it (the caller commits it). */
async function insertKeyRow(q: ReservedSql, key: string, procedure: string) {
  const fp = fingerprint(procedure, { tag: key, amount: 1, outcome: "ok" });
  await q`insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, completed_at, expires_at)
    values (${tenant.id}, ${key}, ${procedure}, ${fp.hash}, ${fp.request}, 'completed', 201, ${JSON.stringify({ tag: key })}, now(), now() + interval '1 hour')`;
}

/** Sessions waiting for another transaction to end: an INSERT at a unique index whose key another transaction inserted and has not committed. */
async function transactionWaiters(): Promise<number> {
  const [row] = await database().sql<
    { n: number }[]
  >`select count(*)::int as n from pg_locks where locktype = 'transactionid' and not granted`;
  return row!.n;
}

async function until(condition: () => Promise<boolean>) {
  while (!(await condition())) await new Promise((r) => setTimeout(r, 10));
}

/** The key's recorded events of these types, in order, as written by the batched event writer. */
async function eventsOf(tenantId: string, key: string, types: string[]) {
  await eventLog.flush();
  return database().sql<{ type: string; waited_ms: number | null }[]>`
    select type, waited_ms from idempotency_events where tenant_id = ${tenantId} and key = ${key} and type in ${database().sql(types)} order by at, id`;
}

async function burst(path: "/t/atomic" | "/t/recoverable", key: string) {
  const ready = barrier(BURST);
  const body = { tag: key, amount: 42 };
  return Promise.all(
    Array.from({ length: BURST }, async () => {
      await ready();
      const res = await post(tenant, path, body, key);
      return { status: res.status, body: await res.text(), replayed: res.headers.get("idempotent-replayed") === "true" };
    }),
  );
}

describe.each(["/t/atomic", "/t/recoverable"] as const)("%s: %i-way same-key bursts", (path) => {
  it(`runs exactly once per key over ${REPETITIONS} bursts`, async () => {
    for (let i = 0; i < REPETITIONS; i++) {
      const key = uniqueKey(`burst${i}`);
      const answers = await burst(path, key);
      const executions = await effectsFor(tenant.id, key);
      // atomic writes one effect, recoverable two (one per phase), each exactly once.
      expect(executions.length, `key ${key}`).toBe(path === "/t/atomic" ? 1 : 2);
      const ok = answers.filter((a) => a.status === 201);
      expect(ok.length + answers.filter((a) => a.status === 409).length).toBe(BURST);
      expect(new Set(ok.map((a) => a.body)).size).toBe(1);
      expect(ok.filter((a) => !a.replayed)).toHaveLength(1);
      const row = await keyRow(tenant.id, key);
      expect(row).toMatchObject({ state: "completed", response_status: 201, response_body: ok[0]!.body });
      expect(row!.replay_count).toBe(ok.length - 1);
    }
  });
});

describe("a duplicate while the first attempt is still running", () => {
  it("atomic, with a wait budget: a duplicate whose INSERT meets the first's uncommitted key row waits for it, says how long, and replays", async () => {
    const key = uniqueKey();
    // The first attempt's key row, inserted and not yet committed (a transaction of the test's own stands in for its COMMIT's round trip).
    const holder = await database().sql.reserve();
    try {
      await holder`begin`;
      await insertKeyRow(holder, key, "atomic");
      const second = (await caller(tenant, key)).atomic({ tag: key, amount: 1 });
      await until(async () => (await transactionWaiters()) > 0);
      await new Promise((r) => setTimeout(r, 50));
      await holder`commit`;
      expect(await second).toEqual({ tag: key });
    } finally {
      holder.release();
    }
    // Its own effect rolled back with its failed INSERT; it waited at the unique index, said so with how long, then replayed.
    expect(await effectsFor(tenant.id, key)).toHaveLength(0);
    const events = await eventsOf(tenant.id, key, ["waited", "replayed"]);
    expect(events.map((e) => e.type)).toEqual(["waited", "replayed"]);
    expect(events[0]!.waited_ms).toBeGreaterThanOrEqual(50);
  });

  it("recoverable, with a wait budget: the duplicate waits for the holder, records the wait, then replays", async () => {
    const key = uniqueKey();
    const hold = park(key, "between");
    const first = post(tenant, "/t/recoverable", { tag: key, amount: 1 }, key);
    await hold.entered;
    const second = post(tenant, "/t/recoverable", { tag: key, amount: 1 }, key);
    await new Promise((r) => setTimeout(r, 100));
    hold.release();
    const [a, b] = await Promise.all([first, second]);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(await b.text()).toBe(await a.text());
    expect(await effectsFor(tenant.id, key)).toHaveLength(2);
    const events = await eventsOf(tenant.id, key, ["waited", "replayed"]);
    expect(events.map((e) => e.type)).toEqual(["waited", "replayed"]);
    expect(events[0]!.waited_ms).toBeGreaterThan(0);
    hooks.delete(key);
  });

  it("recoverable: each of several duplicates records one wait, though it may wait for another duplicate's lock and then for the holder", async () => {
    const DUPLICATES = 6;
    for (let round = 0; round < 3; round++) {
      const key = uniqueKey(`one-wait${round}`);
      const hold = park(key, "between");
      const first = post(tenant, "/t/recoverable", { tag: key, amount: 1 }, key);
      await hold.entered;
      const ready = barrier(DUPLICATES);
      const duplicates = Array.from({ length: DUPLICATES }, async () => {
        await ready();
        return post(tenant, "/t/recoverable", { tag: key, amount: 1 }, key);
      });
      await new Promise((r) => setTimeout(r, 150));
      hold.release();
      const answers = await Promise.all([first, ...duplicates]);
      expect(answers.slice(1).map((a) => a.headers.get("idempotent-replayed"))).toEqual(Array(DUPLICATES).fill("true"));
      expect(await effectsFor(tenant.id, key)).toHaveLength(2);
      // Every duplicate waited (the holder was parked) and replayed; replays are written as one counted row.
      expect(await eventsOf(tenant.id, key, ["waited"])).toHaveLength(DUPLICATES);
      expect((await keyRow(tenant.id, key))!.replay_count).toBe(DUPLICATES);
      hooks.delete(key);
    }
  });

  it("an attempt nobody holds the key against records no wait", async () => {
    const key = uniqueKey();
    expect((await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key)).status).toBe(201);
    expect((await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key)).headers.get("idempotent-replayed")).toBe("true");
    expect((await eventsOf(tenant.id, key, ["waited", "replayed"])).map((e) => e.type)).toEqual(["replayed"]);
  });

  it("atomic, without a wait budget: a duplicate whose INSERT meets an uncommitted key row gets 409 with Retry-After at once, and later the replay", async () => {
    const key = uniqueKey();
    const first = await database().sql.reserve();
    try {
      // The first attempt has run and sent its INSERT; its COMMIT has not landed yet.
      await first`begin`;
      await first`insert into test_effects (tenant_id, key, note, amount) values (${tenant.id}, ${key}, ${key}, 1)`;
      await insertKeyRow(first, key, "atomicNoWait");
      const dup = await post(tenant, "/t/atomic-no-wait", { tag: key, amount: 1 }, key);
      expect(dup.status).toBe(409);
      expect(dup.headers.get("retry-after")).toBe("1");
      expect(await dup.json()).toMatchObject({ type: "/problems/idempotency-key-in-progress", status: 409 });
      await first`commit`;
    } finally {
      first.release();
    }
    const later = await post(tenant, "/t/atomic-no-wait", { tag: key, amount: 1 }, key);
    expect(later.headers.get("idempotent-replayed")).toBe("true");
    expect(await later.json()).toEqual({ tag: key });
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
  });

  it("recoverable, without a wait budget: the committed in-progress key answers 409 until it completes", async () => {
    const key = uniqueKey();
    const hold = park(key);
    const first = post(tenant, "/t/recoverable-no-wait", { tag: key, amount: 1 }, key);
    await hold.entered;
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "in_progress", recovery_point: "recorded", lease_expired: false });
    const dup = await post(tenant, "/t/recoverable-no-wait", { tag: key, amount: 1 }, key);
    expect(dup.status).toBe(409);
    hold.release();
    expect((await first).status).toBe(201);
    expect(await effectsFor(tenant.id, key)).toHaveLength(2);
    hooks.delete(key);
  });
});
