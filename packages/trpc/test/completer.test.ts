/**
 * The completer finishes what a crashed holder left and no client came back
 * for: it takes the stale key over, reruns the procedure from its recovery
 * point, stores the answer, and a client that returns later gets it replayed.
 */
import type { Sql } from "postgres";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { createCompleter } from "../src/index.js";
import { createApp, crashHolder, downstreamCallsOf, effectsOf, fresh, openDatabase, post, serve, type Served } from "./harness.js";

const LEASE_MS = 1_000;
let sql: Sql;
let app: Served;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql, { leaseMs: LEASE_MS });
});
afterAll(async () => {
  await app?.close();
  await sql?.end({ timeout: 5 });
});

it("completes a recoverable key whose holder died after its recovery point, once; a later retry replays its answer", async () => {
  const key = fresh("complete");
  await crashHolder(inject("packageDatabaseUrl"), LEASE_MS, "pay", key, "between");

  const { createCaller } = createApp(sql, { leaseMs: LEASE_MS });
  const completer = createCompleter({
    sql: () => sql,
    procedures: ["pay"],
    rerun: (due, call) => createCaller({ tenant: { id: due.tenantId }, ...call }).pay(due.input as never),
  });
  // Before the lease runs out the key is still the dead holder's: nothing is taken.
  expect((await completer.completeDueKeys({ key })).map((o) => o.outcome)).not.toContain("completed");
  await new Promise((r) => setTimeout(r, LEASE_MS + 300));
  expect((await completer.completeDueKeys({ key })).map((o) => o.outcome)).toEqual(["completed"]);
  expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });

  const retry = await post(app.base, "pay", key, { tag: key, amount: 2500 });
  expect(retry).toMatchObject({ status: 200, replayed: true });
  expect(JSON.parse(retry.body)).toMatchObject({ result: { data: { amount: 2500 } } });
  // A second round finds nothing left to do.
  expect(await completer.completeDueKeys({ key })).toEqual([]);
  const calls = await downstreamCallsOf(sql, key);
  expect(calls).toHaveLength(2);
  expect(new Set(calls).size).toBe(1);
});
