/**
 * "Provider down for good": the completer's rounds for a lab run's key, on
 * the lab's clock. The shopper has left, so only the completer can finish
 * the payment; it runs here with the lab's short budget
 * (LAB_COMPLETER_BUDGET) until it gives up and the key needs attention, as
 * it would after a quarter of an hour with its own. Every attempt is the
 * real completer (server/keys/completer.ts): its claim, backoff and give-up
 * are the middleware's; an instance's own completer round may take some of
 * the attempts meanwhile, and counts against the same budget.
 */
import type { Sql } from "postgres";
import { KeyState, needsAttention } from "@exactly-once/trpc";
import type { Completer } from "../keys/completer";
import { Lane, recordStep, stepsWritten, type LabRun } from "./runs";
import { labKeyOf, LAB_COMPLETER_BUDGET } from "./scenarios";

/** Longer than the lab's whole budget with jitter, and short enough for a page to wait on. */
const GIVE_UP_AFTER_MS = 60_000;
const POLL_MS = 100;

export type AttentionState = { needsAttention: boolean; attempts: number; lastError: string | null; finished: boolean };

/** Where the run's key stands for the completer: null for a run without a key (the twin) or before its first request. */
export async function attentionOf(sql: Sql, run: LabRun, tenantId: string): Promise<AttentionState | null> {
  const [row] = await sql<{ attention: boolean; in_progress: boolean; attempts: number; error: string | null }[]>`
    select ${needsAttention(sql, "k")} as attention, k.state = ${KeyState.InProgress} as in_progress, k.completer_attempts as attempts, k.completer_error as error
    from idempotency_keys k where k.tenant_id = ${tenantId} and k.key = ${labKeyOf(run.id)}`;
  return row ? { needsAttention: row.attention, attempts: row.attempts, lastError: row.error, finished: !row.in_progress } : null;
}

/** Runs the completer for the run's key until it needs attention (or is finished); null for a run without a key (the twin). */
export async function completeUntilAttention(
  ctx: { sql: Sql; completer: Completer },
  run: LabRun,
  tenantId: string,
): Promise<AttentionState | null> {
  const { sql, completer } = ctx;
  const deadline = Date.now() + GIVE_UP_AFTER_MS;
  for (;;) {
    const state = await attentionOf(sql, run, tenantId);
    if (!state) {
      const words = {
        plain: "no key, so nothing can pick the payment up again: it stays pending",
        technical: "no key, so nothing for the completer to pick up: the payment stays pending",
      };
      recordStep(Lane.App, Lane.App, words, run);
      await stepsWritten(run.id);
      return null;
    }
    if (state.needsAttention || state.finished || Date.now() > deadline) {
      const words = {
        plain: `the completer gives up after ${state.attempts} attempts: the payment waits for an operator`,
        technical: `completer gives up after ${state.attempts} attempts: the key needs attention`,
      };
      if (state.needsAttention) recordStep(Lane.Completer, Lane.App, words, run);
      await stepsWritten(run.id);
      return state;
    }
    // Only this key, and only when due: the completer's own claim decides, with the lab's budget and backoff.
    await completer.completeDueKeys({ sql, tenantId, key: labKeyOf(run.id), limit: 1, ...LAB_COMPLETER_BUDGET });
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
