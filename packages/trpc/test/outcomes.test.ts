/**
 * What the middleware decided comes back with the call's result
 * (`runIdempotent`), whatever the caller did to the request's headers on
 * the way: here every call hands the procedure a copy of them. Each outcome
 * says how the key was taken and how long the call waited for it. The
 * completer, which reads its attempt's outcome the same way, still records
 * a key it finished as completed.
 */
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createCompleter, IdempotencyKeyInProgressError, IdempotencyKeyMismatchError, runIdempotent } from "../src/index.js";
import { crashHolder, createApp, effectsOf, fresh, hooks, openDatabase, park, type Input } from "./harness.js";
import { arrivals, sleep, until } from "./waiting.js";

const LEASE_MS = 1_000;
let sql: Sql;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

describe("runIdempotent, with the request's headers copied into the context", () => {
  const deposit = (key: string, input: Input) =>
    runIdempotent(new Headers({ "idempotency-key": key }), (call) =>
      createApp(sql)
        .createCaller({ ...call, headers: new Headers(call.headers), tenant: { id: "t1" } })
        .deposit(input),
    );

  it("returns the executed call's stored answer, then the replay of the same bytes, then a mismatch's refusal", async () => {
    const key = fresh("copied");
    const first = await deposit(key, { tag: key, amount: 5 });
    expect(first.result).toMatchObject({ ok: true, data: { amount: 5 } });
    expect(first.outcome).toMatchObject({
      procedure: "deposit",
      decision: "executed",
      taken: "claim",
      waitedMs: 0,
      stored: { status: 200 },
      headers: {},
    });

    const again = await deposit(key, { tag: key, amount: 5 });
    expect(again.result).toEqual(first.result);
    expect(again.outcome).toEqual({
      procedure: "deposit",
      decision: "replayed",
      stored: first.outcome?.decision === "executed" ? first.outcome.stored : undefined,
      headers: { "Idempotent-Replayed": "true" },
      waitedMs: 0,
    });

    const other = await deposit(key, { tag: key, amount: 6 });
    expect(other.result.ok).toBe(false);
    expect(other.outcome?.decision === "refused" && other.outcome.problem).toBeInstanceOf(IdempotencyKeyMismatchError);
    expect(other.outcome?.waitedMs).toBe(0);
    expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
  });

  it("returns no outcome for a call refused before the middleware (its input)", async () => {
    const key = fresh("copied-invalid");
    const ran = await deposit(key, { tag: key, amount: -1 });
    expect(ran.result.ok).toBe(false);
    expect(ran.outcome).toBeUndefined();
  });
});

describe("how the key was taken and how long the call waited", () => {
  const arrived = arrivals();
  const pay = (waitMs: number, key: string, input: Input) =>
    runIdempotent(new Headers({ "idempotency-key": key }), (call) =>
      createApp(sql, { waitMs, leaseMs: LEASE_MS }, { around: arrived.around })
        .createCaller({ ...call, tenant: { id: "t1" } })
        .pay(input),
    );
  /** `pay` on `key` parked at its first recovery point, and a duplicate with `waitMs` sent once the holder is there, answered after `heldMs` more. */
  async function duplicateWhileHeld(key: string, waitMs: number, heldMs: number) {
    const hold = park(key, "between");
    const first = pay(waitMs, key, { tag: key, amount: 1 });
    await hold.entered;
    const second = pay(waitMs, key, { tag: key, amount: 1 });
    await until(() => arrived.of(key) === 2);
    await sleep(heldMs);
    hold.release();
    const answers = await Promise.all([first, second]);
    hooks.delete(key);
    return answers;
  }

  it("a fresh claim and its replay waited for nothing", async () => {
    const key = fresh("taken-claim");
    const first = await pay(0, key, { tag: key, amount: 1 });
    expect(first.outcome).toMatchObject({ decision: "executed", taken: "claim", waitedMs: 0 });
    expect((await pay(0, key, { tag: key, amount: 1 })).outcome).toMatchObject({ decision: "replayed", waitedMs: 0 });
  });

  it("a duplicate that waited for the holder replays, saying how long it waited", async () => {
    const key = fresh("taken-waited");
    const [first, second] = await duplicateWhileHeld(key, 5_000, 100);
    expect(first.outcome).toMatchObject({ decision: "executed", taken: "claim", waitedMs: 0 });
    expect(second.outcome).toMatchObject({ decision: "replayed" });
    expect(second.outcome!.waitedMs).toBeGreaterThanOrEqual(50);
    expect(second.result).toEqual(first.result);
  });

  it("a duplicate whose wait ran out is refused, saying how long it waited", async () => {
    const key = fresh("taken-conflict");
    const [first, second] = await duplicateWhileHeld(key, 100, 300);
    expect(first.outcome).toMatchObject({ decision: "executed", taken: "claim" });
    expect(second.outcome?.decision === "refused" && second.outcome.problem).toBeInstanceOf(IdempotencyKeyInProgressError);
    // It gives up before a pause that would overrun the budget: after at least its first two (20 and 40 ms).
    expect(second.outcome!.waitedMs).toBeGreaterThanOrEqual(50);
  });

  it("a retry after its holder died takes the key over", async () => {
    const key = fresh("taken-over");
    await crashHolder(inject("packageDatabaseUrl"), LEASE_MS, "pay", key, "between");
    await sleep(LEASE_MS + 500);
    const retry = await pay(0, key, { tag: key, amount: 2500 });
    expect(retry.outcome).toMatchObject({ decision: "executed", taken: "takeover", waitedMs: 0, stored: { status: 200 } });
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
  });
});

it("the completer records a key it finished as completed when its rerun copies the headers", async () => {
  const key = fresh("copied-complete");
  await crashHolder(inject("packageDatabaseUrl"), LEASE_MS, "pay", key, "between");
  await new Promise((r) => setTimeout(r, LEASE_MS + 300));

  const { createCaller } = createApp(sql, { leaseMs: LEASE_MS });
  const completer = createCompleter({
    sql: () => sql,
    procedures: ["pay"],
    rerun: (due, call) =>
      createCaller({ ...call, headers: new Headers(call.headers), tenant: { id: due.tenantId } }).pay(due.input as never),
  });
  expect(await completer.completeDueKeys({ key })).toEqual([{ tenantId: "t1", key, outcome: "completed", status: 200 }]);
  expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
  const [row] = await sql<{ completed_by: string | null }[]>`select completed_by from idempotency_keys where key = ${key}`;
  expect(row?.completed_by).toBe("completer");
});
