/**
 * The burst: many callers send one key at the same moment. Exactly one may
 * execute (counted in the database, not taken from the answers), every
 * caller must get the same body, and the others wait for the first to commit
 * and then replay: their latency is what a concurrent duplicate costs, and
 * so is their CPU. A loser runs its handler too (its writes roll back when
 * its key row's INSERT meets the winner's), so the CPU of all the calls is
 * measured (`cpu`, per call; the report takes the winners' share out at the
 * fresh-key write's own price to say what a loser costs).
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Sql } from "postgres";
import { cpuUse, selfSnapshot, type CpuSnapshot, type CpuUse } from "./cpu";
import { summarize, type Sample } from "./measure";
import { inputFor } from "./scenarios";
import type { Transport } from "./transports";

export type Burst = {
  keys: number;
  callers: number;
  /** Payments written per key, lowest and highest: both must be 1. */
  executions: { min: number; max: number };
  /** Keys where any caller got a different body from the others. */
  divergent: number;
  winner: Sample;
  losers: Sample;
  /** CPU per call over every burst (the per-key row counts included, a small share). */
  cpu: CpuUse;
};

/** `callers` calls with one key at once, for `keys` keys one after another. */
export async function burst(
  t: Transport,
  sql: Sql,
  tenantId: string,
  keys: number,
  callers: number,
  snapshot: () => Promise<CpuSnapshot> = async () => selfSnapshot(),
): Promise<Burst> {
  const run = randomUUID().slice(0, 8);
  const cpuFrom = await snapshot();
  const winners: number[] = [];
  const losers: number[] = [];
  const executions: number[] = [];
  let divergent = 0;
  for (let k = 0; k < keys; k++) {
    const key = `bench-burst-${t.name}-${run}-${k}`;
    const input = inputFor(k);
    const answers = await Promise.all(
      Array.from({ length: callers }, async () => {
        const began = performance.now();
        // Duplicates of one first send (a proxy or a user sending it again): each says it is the first.
        const answer = await t.wrapped(key, input, 1);
        return { ...answer, ms: performance.now() - began };
      }),
    );
    for (const a of answers) (a.replayed ? losers : winners).push(a.ms);
    if (new Set(answers.map((a) => a.body)).size !== 1) divergent++;
    const [row] = await sql<{ payments: number; entries: number }[]>`
      select (select count(*)::int from payments where tenant_id = ${tenantId} and idempotency_key = ${key}) as payments,
             (select count(*)::int from ledger_entries where tenant_id = ${tenantId} and idempotency_key = ${key}) as entries`;
    // Two ledger entries per payment: anything else is a partial or doubled execution.
    executions.push(row!.entries === 2 * row!.payments ? row!.payments : -1);
  }
  return {
    keys,
    callers,
    cpu: cpuUse(cpuFrom, await snapshot(), keys * callers),
    executions: { min: Math.min(...executions), max: Math.max(...executions) },
    divergent,
    winner: summarize(winners, 1),
    losers: summarize(losers, 1),
  };
}
