/**
 * Concurrent duplicates. Each burst is N calls with the same key, released
 * together by a barrier, each on its own pooled connection (the pool is
 * warmed first so connection set-up does not stagger the start), repeated
 * with fresh keys; executions are counted in the database.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { flushEvents } from "../../server/keys/events";
import { barrier, caller, effectsFor, ensureEffectsTable, hooks, keyRow, newTenant, park, post, uniqueKey, type TestTenant } from "./fixture";

const BURST = 20;
const REPETITIONS = 50;

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("bursts");
  // Warm the pool: every burst member then starts on an open connection.
  await Promise.all(Array.from({ length: 30 }, () => database().sql`select pg_sleep(0.01)`));
});

/** The key's recorded events of these types, in order, as written by the batched event writer. */
async function eventsOf(tenantId: string, key: string, types: string[]) {
  await flushEvents();
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
  it("atomic, with a wait budget: the duplicate waits on the key and then replays", async () => {
    const key = uniqueKey();
    const hold = park(key, "after-write");
    const first = (await caller(tenant, key)).atomic({ tag: key, amount: 1 });
    await hold.entered;
    const second = (await caller(tenant, key)).atomic({ tag: key, amount: 1 });
    await new Promise((r) => setTimeout(r, 100));
    hold.release();
    const [a, b] = await Promise.all([first, second]);
    expect(b).toEqual(a);
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
    // The duplicate waited on the key's advisory lock, said so with how long, then replayed; the first took the lock at once.
    const events = await eventsOf(tenant.id, key, ["waited", "replayed"]);
    expect(events.map((e) => e.type)).toEqual(["waited", "replayed"]);
    expect(events[0]!.waited_ms).toBeGreaterThan(0);
    hooks.delete(key);
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

  it("an attempt nobody holds the key against records no wait", async () => {
    const key = uniqueKey();
    expect((await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key)).status).toBe(201);
    expect((await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key)).headers.get("idempotent-replayed")).toBe("true");
    expect((await eventsOf(tenant.id, key, ["waited", "replayed"])).map((e) => e.type)).toEqual(["replayed"]);
  });

  it("atomic, without a wait budget: 409 with Retry-After, and later the replay", async () => {
    const key = uniqueKey();
    const hold = park(key);
    const first = post(tenant, "/t/atomic-no-wait", { tag: key, amount: 1 }, key);
    await hold.entered;
    const dup = await post(tenant, "/t/atomic-no-wait", { tag: key, amount: 1 }, key);
    expect(dup.status).toBe(409);
    expect(dup.headers.get("retry-after")).toBe("1");
    expect(await dup.json()).toMatchObject({ type: "/problems/idempotency-key-in-progress", status: 409 });
    hold.release();
    const original = await first;
    expect(original.status).toBe(201);
    const later = await post(tenant, "/t/atomic-no-wait", { tag: key, amount: 1 }, key);
    expect(later.headers.get("idempotent-replayed")).toBe("true");
    expect(await later.text()).toBe(await original.text());
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
    hooks.delete(key);
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
