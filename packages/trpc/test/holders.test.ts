/**
 * Holders that stall, fail or hang, in this process. A stalled holder that
 * wakes up after a takeover can neither write its next phase nor complete;
 * an error after a committed phase keeps the recovery point; a live holder
 * renews its lease, and one whose handler hangs past `maxHoldMs` gives the
 * key up and is fenced out.
 */
import { TRPCError } from "@trpc/server";
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  caller,
  createApp,
  downstreamCallsOf,
  effectsOf,
  fresh,
  hooks,
  keyRow,
  openDatabase,
  park,
  post,
  recorder,
  serve,
  signals,
  type Served,
} from "./harness.js";
import { sleep } from "./waiting.js";

let sql: Sql;
let app: Served;
/** A holder that never renews its lease: what a stalled or partitioned process looks like to the others. */
let stalling: ReturnType<typeof createApp>;
/** A short lease that only renewal keeps alive; `hanging`: renewed for three leases at most. */
let renewing: Served;
let hanging: Served;
/** Renews every millisecond, so renewals are in flight when it completes. */
let eager: Served;
const eagerLog = recorder();
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql);
  stalling = createApp(sql, { leaseMs: 400, waitMs: 0 }, { renewEveryMs: () => 0 });
  renewing = await serve(sql, { leaseMs: 300, waitMs: 0 });
  hanging = await serve(sql, { leaseMs: 300, maxHoldMs: 900, waitMs: 0 });
  eager = await serve(sql, { waitMs: 0 }, { renewEveryMs: () => 1, onEvent: eagerLog.onEvent });
});
afterAll(async () => {
  await Promise.all([app, renewing, hanging, eager].map((s) => s?.close()));
  await sql?.end({ timeout: 5 });
});

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e,
  );

describe("a stalled holder that wakes up after a takeover", () => {
  it("cannot write its next phase nor complete; it learns it lost (409); the work happened once", async () => {
    const key = fresh("stalled");
    const stall = park(key, "between");
    const stalled = failure(caller(stalling, key).pay({ tag: key, amount: 5 }));
    await stall.entered;
    await sleep(500); // the 400 ms lease runs out, nobody renews it
    const retry = await caller(stalling, key).pay({ tag: key, amount: 5 });
    expect(retry).toMatchObject({ amount: 5 });
    stall.release();
    const late = await stalled;
    expect(late).toBeInstanceOf(TRPCError);
    expect((late as TRPCError).code).toBe("CONFLICT");
    expect((late as TRPCError).cause?.name).toBe("IdempotencyLeaseLostError");
    // Its signal, first read after the loss, is aborted already; the holder that took over keeps its own.
    const [stalledSignal, retrySignal] = signals.get(key)!.map((signalOf) => signalOf());
    expect((stalledSignal!.reason as Error | undefined)?.name).toBe("IdempotencyLeaseLostError");
    expect(retrySignal!.aborted).toBe(false);
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    const row = await keyRow(sql, key);
    expect(row).toMatchObject({ state: "completed", fence: "2" });
    expect(JSON.parse(row!.response_body!)).toEqual(retry);
    // Both attempts called downstream, with one and the same downstream key: the downstream dedupes it.
    const calls = await downstreamCallsOf(sql, key);
    expect(calls).toHaveLength(2);
    expect(new Set(calls).size).toBe(1);
    hooks.delete(key);
  });

  it("a holder stalled after its last phase cannot complete the key it lost", async () => {
    const key = fresh("late-complete");
    const stall = park(key, "before-complete");
    const stalled = failure(caller(stalling, key).pay({ tag: key, amount: 6 }));
    await stall.entered;
    await sleep(500);
    const retry = await caller(stalling, key).pay({ tag: key, amount: 6 });
    stall.release();
    expect(((await stalled) as TRPCError).code).toBe("CONFLICT");
    const row = await keyRow(sql, key);
    expect(JSON.parse(row!.response_body!)).toEqual(retry);
    // Both phases were committed by the first holder; the one that took over only completed.
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    hooks.delete(key);
  });

  it("an error after a committed phase keeps the recovery point: the retry resumes without redoing it", async () => {
    const key = fresh("resume");
    let attempts = 0;
    hooks.set(key, (point) => {
      if (point !== "between") return;
      attempts += 1;
      if (attempts === 1) throw new Error("the provider connection dropped");
    });
    expect((await post(app.base, "pay", key, { tag: key, amount: 8 })).status).toBe(500);
    expect(await keyRow(sql, key)).toMatchObject({ state: "in_progress", recovery_point: "recorded", lease_expired: true });
    expect((await post(app.base, "pay", key, { tag: key, amount: 8 })).status).toBe(200);
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    hooks.delete(key);
  });
});

describe("a holder still working", () => {
  it("renews its lease, so nobody takes over while it runs for several leases", async () => {
    const key = fresh("renews");
    const hold = park(key, "between");
    const running = post(renewing.base, "pay", key, { tag: key, amount: 2 });
    await hold.entered;
    // Three leases of 300 ms pass; without renewal a duplicate would take over.
    for (let i = 0; i < 3; i++) {
      await sleep(300);
      expect((await post(renewing.base, "pay", key, { tag: key, amount: 2 })).status).toBe(409);
      expect(await keyRow(sql, key)).toMatchObject({ state: "in_progress", fence: "1", lease_expired: false });
    }
    hold.release();
    expect((await running).status).toBe(200);
    expect(await keyRow(sql, key)).toMatchObject({ state: "completed", fence: "1" });
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    hooks.delete(key);
  });

  it("gives the key up when its handler hangs past maxHoldMs: its request answers 409 at once, a retry takes over, the hung holder is fenced out", async () => {
    const key = fresh("hangs");
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered = false;
    let resumed = false;
    hooks.set(key, async (point) => {
      if (point !== "between" || entered) return;
      entered = true;
      await gate;
      resumed = true;
    });
    const running = post(hanging.base, "pay", key, { tag: key, amount: 3 });
    let answered: number | undefined;
    void running.then((res) => (answered = res.status));
    await expect.poll(() => entered).toBe(true);
    // Within its budget the holder's renewals keep the key: a retry is refused.
    expect((await post(hanging.base, "pay", key, { tag: key, amount: 3 })).status).toBe(409);
    expect(answered).toBeUndefined();
    const signal = signals.get(key)![0]!();
    expect(signal.aborted).toBe(false);
    // The budget (900 ms) and the last lease (300 ms) run out; the handler still hangs, but its request is answered
    // and the signal it may have handed to its own calls aborts.
    await sleep(1_500);
    expect(answered).toBe(409);
    expect((signal.reason as Error | undefined)?.name).toBe("IdempotencyLeaseLostError");
    expect(await keyRow(sql, key)).toMatchObject({ state: "in_progress", fence: "1", lease_expired: true });
    expect((await post(hanging.base, "pay", key, { tag: key, amount: 3 })).status).toBe(200);
    expect(await keyRow(sql, key)).toMatchObject({ state: "completed", fence: "2" });
    // The hung holder wakes up, after its request was answered: it goes on to its next phase, which its lost
    // lease refuses, and it writes nothing more.
    release();
    await expect.poll(() => resumed).toBe(true);
    await sleep(500);
    expect(await downstreamCallsOf(sql, key)).toHaveLength(2);
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    expect(await keyRow(sql, key)).toMatchObject({ state: "completed", fence: "2" });
    hooks.delete(key);
  });

  it("completes without reporting a lost lease when renewals are still in flight at completion", async () => {
    const keys = Array.from({ length: 30 }, () => fresh("eager"));
    for (const key of keys) expect((await post(eager.base, "pay", key, { tag: key, amount: 1 })).status).toBe(200);
    const mine = new Set(keys);
    expect(eagerLog.events.filter((e) => mine.has(e.key) && e.type === "lease_lost")).toEqual([]);
    expect(eagerLog.events.filter((e) => mine.has(e.key) && e.type === "completed")).toHaveLength(keys.length);
  });
});
