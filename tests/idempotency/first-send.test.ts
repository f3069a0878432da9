/**
 * `Idempotency-Attempt: 1`: the client says this is its first send of the
 * key, and the atomic flavour runs the handler without looking for a stored
 * answer first; the recoverable flavour sends its claim alone. A client that
 * says so wrongly must get exactly what a retry gets (the stored answer, a
 * mismatch, a replaced expired key), with an atomic handler's work rolled
 * back and a recoverable handler not run at all: counted here in rows,
 * handler runs and calls out.
 */
import { IDEMPOTENCY_ATTEMPT_HEADER } from "@exactly-once/trpc";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import {
  barrier,
  downstreamCalls,
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

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("first-send");
});

async function send(key: string, body: Record<string, unknown>, attempt?: string, path = "/t/atomic") {
  const res = await post(tenant, path, body, key, attempt === undefined ? {} : { [IDEMPOTENCY_ATTEMPT_HEADER]: attempt });
  return { status: res.status, body: await res.text(), replayed: res.headers.get("idempotent-replayed") === "true" };
}

/** Counts how often the handler of `tag` starts: a replay decided by the look never starts it. */
function countRuns(tag: string) {
  const runs = { count: 0 };
  hooks.set(tag, (point) => {
    if (point === "before") runs.count++;
  });
  return runs;
}

describe("a client's first send of a key (Idempotency-Attempt: 1)", () => {
  it("runs the handler once, stores its answer, and a retry replays it byte for byte without running it", async () => {
    const key = uniqueKey("first");
    const runs = countRuns(key);
    const first = await send(key, { tag: key, amount: 5 }, "1");
    expect(first).toMatchObject({ status: 201, replayed: false });
    const retry = await send(key, { tag: key, amount: 5 }, "2");
    expect(retry).toEqual({ ...first, replayed: true });
    expect(runs.count).toBe(1);
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", response_body: first.body, replay_count: 1 });
  });

  it("on a key that already has its answer: the handler runs in vain, its write rolls back, and the stored answer is replayed", async () => {
    for (let i = 0; i < 10; i++) {
      const key = uniqueKey(`wrong${i}`);
      const runs = countRuns(key);
      const first = await send(key, { tag: key, amount: 5 }, "1");
      const again = await send(key, { tag: key, amount: 5 }, "1");
      expect(again).toEqual({ ...first, replayed: true });
      // Two runs: the look was left out; one effect: the second run's write did not commit.
      expect(runs.count).toBe(2);
      expect(await effectsFor(tenant.id, key)).toHaveLength(1);
      expect(await keyRow(tenant.id, key)).toMatchObject({ response_body: first.body, replay_count: 1 });
    }
  });

  it("only the value 1 leaves the look out: any other value, or none, replays without running the handler", async () => {
    const key = uniqueKey("values");
    const runs = countRuns(key);
    const first = await send(key, { tag: key, amount: 5 }, "1");
    for (const attempt of [undefined, "2", "01", "1, 1", "one", ""]) {
      expect(await send(key, { tag: key, amount: 5 }, attempt), `Idempotency-Attempt: ${attempt}`).toEqual({ ...first, replayed: true });
    }
    expect(runs.count).toBe(1);
  });

  it("a stored refusal is replayed to a first send too, and the handler's write rolls back", async () => {
    const key = uniqueKey("refused");
    const body = { tag: key, amount: 5, outcome: "refuse" };
    const first = await send(key, body, "1");
    expect(first.status).toBe(402);
    const again = await send(key, body, "1");
    expect(again).toEqual({ ...first, replayed: true });
    expect(await effectsFor(tenant.id, key)).toHaveLength(0);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "failed", response_status: 402, replay_count: 1 });
  });

  it("another request's key: 422, and nothing of the first send commits", async () => {
    const key = uniqueKey("mismatch");
    await send(key, { tag: key, amount: 5 }, "1");
    const other = await send(key, { tag: key, amount: 6 }, "1");
    expect(other.status).toBe(422);
    expect((await effectsFor(tenant.id, key)).map((e) => e.note)).toEqual([key]);
  });

  it("an expired key is replaced: the first send runs and its answer is stored in place of the old one", async () => {
    const key = uniqueKey("expired");
    const runs = countRuns(key);
    const old = await send(key, { tag: key, amount: 5 }, "1");
    await database()
      .sql`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = ${tenant.id} and key = ${key}`;
    const fresh = await send(key, { tag: key, amount: 7 }, "1");
    expect(fresh).toMatchObject({ status: 201, replayed: false });
    expect(fresh.body).not.toBe(old.body);
    // The first run on the expired key met its row at the INSERT and rolled back; the locking way replaced it and ran again.
    expect(runs.count).toBe(3);
    expect(await effectsFor(tenant.id, key)).toHaveLength(2);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", response_body: fresh.body });
  });

  it("two first sends whose handlers have both written: one commits, the other waits at the unique index and replays it", async () => {
    for (let i = 0; i < 20; i++) {
      const key = uniqueKey(`race${i}`);
      // Both handlers write, then wait for each other: both transactions are open when the INSERTs go out.
      const written = barrier(2);
      hooks.set(key, async (point) => {
        if (point === "after-write") await written();
      });
      const answers = await Promise.all([send(key, { tag: key, amount: 5 }, "1"), send(key, { tag: key, amount: 5 }, "1")]);
      expect(answers.map((a) => a.status)).toEqual([201, 201]);
      expect(answers.filter((a) => a.replayed)).toHaveLength(1);
      expect(answers[0]!.body).toBe(answers[1]!.body);
      expect(await effectsFor(tenant.id, key)).toHaveLength(1);
      expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", response_body: answers[0]!.body, replay_count: 1 });
    }
  });
});

describe("a recoverable first send (Idempotency-Attempt: 1): the claim alone", () => {
  const sendRecoverable = (key: string, body: Record<string, unknown>, attempt?: string) => send(key, body, attempt, "/t/recoverable");
  const callsOutOf = (tag: string) => downstreamCalls.filter((c) => c.tag === tag);
  const callsOut = (tag: string) => callsOutOf(tag).length;

  it("claims the key, runs once, and a retry replays the answer byte for byte", async () => {
    const key = uniqueKey("rec-first");
    const first = await sendRecoverable(key, { tag: key, amount: 5 }, "1");
    expect(first).toMatchObject({ status: 201, replayed: false });
    expect(await sendRecoverable(key, { tag: key, amount: 5 }, "2")).toEqual({ ...first, replayed: true });
    expect(callsOut(key)).toBe(1);
    expect(await effectsFor(tenant.id, key)).toHaveLength(2);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", response_body: first.body, replay_count: 1 });
  });

  it("on a key that already has its answer: the claim finds the row, the handler does not run, the answer is replayed", async () => {
    for (let i = 0; i < 10; i++) {
      const key = uniqueKey(`rec-wrong${i}`);
      const first = await sendRecoverable(key, { tag: key, amount: 5 }, "1");
      expect(await sendRecoverable(key, { tag: key, amount: 5 }, "1")).toEqual({ ...first, replayed: true });
      expect(callsOut(key)).toBe(1);
      expect(await effectsFor(tenant.id, key)).toHaveLength(2);
    }
  });

  it("another request's key: 422, and nothing runs", async () => {
    const key = uniqueKey("rec-mismatch");
    await sendRecoverable(key, { tag: key, amount: 5 }, "1");
    expect((await sendRecoverable(key, { tag: key, amount: 6 }, "1")).status).toBe(422);
    expect(callsOut(key)).toBe(1);
  });

  it("an expired key is replaced: the first send runs under a new generation", async () => {
    const key = uniqueKey("rec-expired");
    const old = await sendRecoverable(key, { tag: key, amount: 5 }, "1");
    await database()
      .sql`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = ${tenant.id} and key = ${key}`;
    const fresh = await sendRecoverable(key, { tag: key, amount: 7 }, "1");
    expect(fresh).toMatchObject({ status: 201, replayed: false });
    expect(fresh.body).not.toBe(old.body);
    const calls = callsOutOf(key);
    expect(calls).toHaveLength(2);
    expect(calls[0]!.downstreamKey).not.toBe(calls[1]!.downstreamKey);
  });

  it("a second first send while the first holds the key: its claim fails, it waits for the holder and replays", async () => {
    for (let i = 0; i < 5; i++) {
      const key = uniqueKey(`rec-race${i}`);
      const hold = park(key, "between");
      const first = sendRecoverable(key, { tag: key, amount: 5 }, "1");
      await hold.entered;
      // The first holds the key (claimed, its phase committed) while the second sends its claim.
      const second = sendRecoverable(key, { tag: key, amount: 5 }, "1");
      await new Promise((resolve) => setTimeout(resolve, 150));
      hold.release();
      const answers = await Promise.all([first, second]);
      expect(answers.map((a) => a.status)).toEqual([201, 201]);
      expect(answers.map((a) => a.replayed)).toEqual([false, true]);
      expect(answers[1]!.body).toBe(answers[0]!.body);
      expect(callsOut(key)).toBe(1);
      expect(await effectsFor(tenant.id, key)).toHaveLength(2);
    }
  });
});
