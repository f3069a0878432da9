/**
 * The key row's trace id (the runtime's `traceId`, `trace_id`): a claim
 * stores the trace of the request that took the key, in both flavours; a
 * takeover keeps the first request's; an expired key taken anew gets its new
 * request's; a request whose trace is not recorded stores none.
 */
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { fresh, hooks, openDatabase, post, serve, type Flavour, type Served } from "./harness.js";

/** The trace the next request runs in, as the runtime's `traceId` reports it. */
let currentTrace: string | undefined;
let sql: Sql;
let app: Served;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql, { waitMs: 0 }, { traceId: () => currentTrace });
});
afterAll(async () => {
  await app?.close();
  await sql?.end({ timeout: 5 });
});

async function call(procedure: Flavour, key: string, traceId: string | undefined, amount = 1) {
  currentTrace = traceId;
  return post(app.base, procedure, key, { tag: key, amount });
}

async function traceOf(key: string) {
  const [row] = await sql<{ trace_id: string | null; fence: string }[]>`
    select trace_id, fence from idempotency_keys where tenant_id = 't1' and key = ${key}`;
  return { ...row };
}

const trace = (n: number) => n.toString(16).padStart(32, "0");
const FLAVOURS = ["deposit", "pay"] as const;

describe("the key row's trace id", () => {
  it.each(FLAVOURS)("%s: the claim stores the trace of the request that took the key; a replay changes nothing", async (procedure) => {
    const key = fresh("trace-claim");
    await call(procedure, key, trace(1));
    expect(await traceOf(key)).toEqual({ trace_id: trace(1), fence: "1" });
    expect((await call(procedure, key, trace(2))).replayed).toBe(true);
    expect(await traceOf(key)).toEqual({ trace_id: trace(1), fence: "1" });
  });

  it.each(FLAVOURS)("%s: a request whose trace is not recorded stores none", async (procedure) => {
    const key = fresh("trace-none");
    await call(procedure, key, undefined);
    expect(await traceOf(key)).toEqual({ trace_id: null, fence: "1" });
  });

  it("a takeover keeps the trace of the request that first took the key", async () => {
    const key = fresh("trace-takeover");
    // After a committed phase an unexpected error releases the key: the retry takes it over.
    let failed = false;
    hooks.set(key, (point) => {
      if (point === "between" && !failed) {
        failed = true;
        throw new Error("an unexpected failure");
      }
    });
    expect((await call("pay", key, trace(3))).status).toBe(500);
    expect((await call("pay", key, trace(4))).status).toBe(200);
    expect(await traceOf(key)).toEqual({ trace_id: trace(3), fence: "2" });
    hooks.delete(key);
  });

  it.each(FLAVOURS)("%s: an expired key taken anew gets its new request's trace", async (procedure) => {
    const key = fresh("trace-expired");
    await call(procedure, key, trace(5));
    await sql`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = 't1' and key = ${key}`;
    await call(procedure, key, trace(6), 2);
    expect(await traceOf(key)).toEqual({ trace_id: trace(6), fence: "2" });
  });
});
