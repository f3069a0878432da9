/**
 * What the lab's sequence diagram is drawn from: the app's own events, as
 * its ports report them (the middleware's onEvent, the provider client's
 * observer, the ledger's onMovement, the completer's attempts), turned into
 * steps of the current lab run as they happen. Each function is a no-op
 * outside a lab run, so production paths pay one AsyncLocalStorage lookup
 * and nothing else.
 */
import { IdempotencyEventType, REPLAYED_HEADER, type IdempotencyEvent, type ResponseSink } from "@exactly-once/trpc";
import type { Movement } from "../ledger/post";
import type { ObservedCall as ProviderCall } from "../psp/client";
import { findRun, Lane, recordStep, stepsWritten, withinRun } from "./runs";
import { labKeyOf } from "./scenarios";

/** A key event, as the database decided it (claim, replay, conflict, takeover, a phase committed or skipped…). */
export function traceKeyEvent(e: IdempotencyEvent): void {
  if (e.type === IdempotencyEventType.PhaseCommitted) return recordStep(Lane.App, Lane.Database, `phase "${e.recoveryPoint}" committed (recovery point)`);
  if (e.type === IdempotencyEventType.PhaseSkipped) return recordStep(Lane.App, Lane.Database, `phase "${e.recoveryPoint}" skipped: committed by an earlier attempt`);
  if (e.waitedMs !== undefined) {
    // Drawn where the wait began, so the steps of the holder it waited for fall inside it.
    recordStep(Lane.App, Lane.Database, `waited ${e.waitedMs} ms for the key's lock`, undefined, e.waitedMs);
    return;
  }
  const parts = [`key ${e.type.replace("_", " ")}`];
  if (e.fence !== undefined) parts.push(`fence ${e.fence}`);
  if (e.status !== undefined) parts.push(`status ${e.status}`);
  if (e.recoveryPoint) parts.push(`at ${e.recoveryPoint}`);
  recordStep(Lane.App, Lane.Database, parts.join(", "));
}

/** One request to the provider: its downstream key, and whether the provider answered from its own idempotency. */
export function traceProviderCall(call: ProviderCall): void {
  const key = call.key ? ` key ${call.key.slice(0, 12)}…` : "";
  recordStep(Lane.App, Lane.Provider, `${call.method} ${call.path}${key}`, undefined, call.elapsedMs);
  const answer = call.status === undefined ? `no answer (${call.error ?? "network error"})` : `${call.status}${call.replayed ? " replayed by the provider" : ""}`;
  recordStep(Lane.Provider, Lane.App, answer);
}

/** A ledger movement, written with its business change. */
export function traceLedgerMovement(m: Movement & { amountMinor: number }): void {
  const kind = m.lines.map((l) => `${l.direction} ${l.account}`).join(", ");
  recordStep(Lane.App, Lane.Database, `ledger movement: ${kind} ${(m.amountMinor / 100).toFixed(2)} ${m.currency}`);
}

const LAB_KEY_PREFIX = labKeyOf("");

/**
 * The completer's attempt on a lab run's key, recorded into that run under a
 * lane of its own: its takeover, skipped phases, provider call and ledger
 * movement are then drawn like a client's, so a crash the completer finished
 * before the browser came back tells its whole story. `response` is what the
 * attempt answered (status, and whether it was a replay).
 */
export async function traceCompleterAttempt<T>(enabled: () => boolean, key: string, response: ResponseSink, attempt: () => Promise<T>): Promise<T> {
  // The prefix first: outside the lab (every real key) nothing else is looked at.
  const run = key.startsWith(LAB_KEY_PREFIX) && enabled() ? await findRun(key.slice(LAB_KEY_PREFIX.length)) : undefined;
  if (!run) return attempt();
  return withinRun(run, async () => {
    recordStep(Lane.Completer, Lane.App, "completer takes the key up: its lease ran out with no client finishing it");
    try {
      return await attempt();
    } finally {
      const replayed = response.headers.get(REPLAYED_HEADER) === "true";
      recordStep(
        Lane.App,
        Lane.Completer,
        response.status === undefined ? "not finished: the completer tries again later" : replayed ? "already finished by another attempt: nothing to do" : `result stored (${response.status}): a retry gets it replayed`,
      );
      await stepsWritten(run.id);
    }
  });
}
