/**
 * What the lab's sequence diagram is drawn from: the app's own events,
 * turned into steps of the current lab run as they happen. Each function is
 * a no-op outside a lab run, so production paths pay one AsyncLocalStorage
 * lookup and nothing else.
 */
import { REPLAYED_HEADER, type IdempotencyEvent, type RecoverableHandle } from "../idempotency";
import type { ObservedCall as ProviderCall } from "../psp/client";
import { isDemoMode } from "../env";
import { currentRun, findRun, Lane, recordStep, stepsWritten, withinRun } from "./runs";
import { labKeyOf } from "./scenarios";

/** A key event, as the database decided it (claim, replay, conflict, takeover…). */
export function traceKeyEvent(e: IdempotencyEvent): void {
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

/** A ledger movement committed with its business change. */
export function traceLedgerMovement(kind: string, amountMinor: number, currency: string): void {
  recordStep(Lane.App, Lane.Database, `ledger movement: ${kind} ${(amountMinor / 100).toFixed(2)} ${currency}`);
}

/** A webhook delivery reaches the app in a request of the provider's, not the run's: the lab's event ids name their run (demo mode only). */
export function traceWebhook(eventId: string, duplicate: boolean): void {
  const run = isDemoMode() && eventId.startsWith("evt_lab_") ? { id: eventId.slice("evt_lab_".length) } : undefined;
  recordStep(Lane.Provider, Lane.App, `webhook ${eventId} ${duplicate ? "recognised as a duplicate: nothing applied" : "applied once, its id recorded"}`, run);
}

/**
 * The handle with its phases recorded: a committed phase is a recovery
 * point, and a phase an earlier attempt committed is skipped (the takeover
 * resumes after it). Outside a lab run the handle is returned as it is.
 */
export function tracedPhases<TTx>(h: RecoverableHandle<TTx>): RecoverableHandle<TTx> {
  if (!currentRun()) return h;
  // Inherits from the handle, so its live fields (recoveryPoint) read through.
  const traced = Object.create(h) as RecoverableHandle<TTx>;
  traced.phase = async (name, fn) => {
    let ran = false;
    const value = await h.phase(name, (tx) => {
      ran = true;
      return fn(tx);
    });
    recordStep(Lane.App, Lane.Database, ran ? `phase "${name}" committed (recovery point)` : `phase "${name}" skipped: committed by an earlier attempt`);
    return value;
  };
  return traced;
}

const LAB_KEY_PREFIX = labKeyOf("");

/**
 * The completer's attempt on a lab run's key, recorded into that run under a
 * lane of its own: its takeover, skipped phases, provider call and ledger
 * movement are then drawn like a client's, so a crash the completer finished
 * before the browser came back tells its whole story. `response` is what the
 * attempt answered (status, and whether it was a replay).
 */
export async function traceCompleterAttempt<T>(key: string, response: { status?: number; headers: Headers }, attempt: () => Promise<T>): Promise<T> {
  // The prefix first: outside the lab (every real key) nothing else is looked at.
  const run = key.startsWith(LAB_KEY_PREFIX) && isDemoMode() ? await findRun(key.slice(LAB_KEY_PREFIX.length)) : undefined;
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
