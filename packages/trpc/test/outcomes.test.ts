/**
 * What the middleware decided comes back with the call's result
 * (`runIdempotent`), whatever the caller did to the request's headers on
 * the way: here every call hands the procedure a copy of them. The
 * completer, which reads its attempt's outcome the same way, still records
 * a key it finished as completed.
 */
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createCompleter, IdempotencyKeyMismatchError, runIdempotent } from "../src/index.js";
import { crashHolder, createApp, effectsOf, fresh, openDatabase, type Input } from "./harness.js";

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
    expect(first.outcome).toMatchObject({ procedure: "deposit", decision: "executed", stored: { status: 200 }, headers: {} });

    const again = await deposit(key, { tag: key, amount: 5 });
    expect(again.result).toEqual(first.result);
    expect(again.outcome).toEqual({
      procedure: "deposit",
      decision: "replayed",
      stored: first.outcome?.decision === "executed" ? first.outcome.stored : undefined,
      headers: { "Idempotent-Replayed": "true" },
    });

    const other = await deposit(key, { tag: key, amount: 6 });
    expect(other.result.ok).toBe(false);
    expect(other.outcome?.decision === "refused" && other.outcome.problem).toBeInstanceOf(IdempotencyKeyMismatchError);
    expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
  });

  it("returns no outcome for a call refused before the middleware (its input)", async () => {
    const key = fresh("copied-invalid");
    const ran = await deposit(key, { tag: key, amount: -1 });
    expect(ran.result.ok).toBe(false);
    expect(ran.outcome).toBeUndefined();
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
