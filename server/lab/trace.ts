/**
 * What the lab's sequence diagram is drawn from: the app's own events, as
 * its ports report them (the middleware's onEvent, the provider client's
 * observer, the ledger's observer, the completer's attempts), turned into
 * steps of the current lab run as they happen. Each function is a no-op
 * outside a lab run, so production paths pay one AsyncLocalStorage lookup
 * and nothing else.
 */
import type { Sql } from "postgres";
import { IdempotencyEventType, type IdempotencyEvent, type KeyOutcome } from "@exactly-once/trpc";
import { Book, type Movement } from "../ledger/post";
import type { ObservedCall as ProviderCall } from "../psp/client";
import { currentRun, findRun, Lane, recordStep, stepsWritten, withinRun } from "./runs";
import { labKeyOf } from "./scenarios";

/** A key event, as the database decided it (claim, replay, conflict, takeover, a phase committed or skipped…). */
export function traceKeyEvent(e: IdempotencyEvent): void {
  // Every key event of every request comes here; outside a lab run there is no step to word.
  const run = currentRun();
  if (!run) return;
  if (e.type === IdempotencyEventType.PhaseCommitted)
    return recordStep(Lane.App, Lane.Database, `phase "${e.recoveryPoint}" committed (recovery point)`, run);
  if (e.type === IdempotencyEventType.PhaseSkipped)
    return recordStep(Lane.App, Lane.Database, `phase "${e.recoveryPoint}" skipped: committed by an earlier attempt`, run);
  if (e.waitedMs !== undefined) {
    // Recorded where the wait began: the diagram draws it from there to where it ended, over the holder's steps it waited for.
    recordStep(Lane.App, Lane.Database, `waited ${e.waitedMs} ms for the key`, run, e.waitedMs);
    return;
  }
  const parts = [`key ${e.type.replace("_", " ")}`];
  if (e.fence !== undefined) parts.push(`fence ${e.fence}`);
  if (e.status !== undefined) parts.push(`status ${e.status}`);
  if (e.recoveryPoint) parts.push(`at ${e.recoveryPoint}`);
  recordStep(Lane.App, Lane.Database, parts.join(", "), run);
}

/** What a call to the provider asks for, in words (the key it sends says which operation it is). */
function providerAsk(call: ProviderCall): string {
  return PROVIDER_ASKS.find(([method, path]) => call.method === method && path.test(call.path))?.[2] ?? `${call.method} ${call.path}`;
}
const PROVIDER_ASKS: [string, RegExp, string][] = [
  ["POST", /^\/charges$/, "charge the card"],
  ["POST", /\/capture$/, "capture the charge"],
  ["POST", /\/void$/, "void the charge"],
  ["POST", /\/refunds$/, "refund"],
  ["GET", /^\/keys\//, "tell what became of this key"],
];

/** One request to the provider: its downstream key, and whether the provider answered from its own idempotency. */
export function traceProviderCall(call: ProviderCall): void {
  const key = call.key ? `, key ${call.key.slice(0, 12)}…` : "";
  recordStep(Lane.App, Lane.Provider, `asks the provider to ${providerAsk(call)}${key}`, undefined, call.elapsedMs);
  const answer =
    call.status === undefined
      ? "the provider did not answer"
      : `the provider answered ${call.status}${call.replayed ? " from its record of this key: no second charge" : ""}`;
  recordStep(Lane.Provider, Lane.App, answer);
}

/** The ledger's accounts as a shopper would name them. */
function accountName(account: string): string {
  if (account === Book.pspClearing) return "the card (the provider owes it)";
  if (account === Book.sales) return "the shop";
  if (account === Book.refunds) return "the shop's refunds";
  if (account === Book.cash) return "cash";
  return account.startsWith("customer_balance:") ? "the customer's balance" : account;
}

/** A ledger movement, written with its business change: from the debited account to the credited one, in words. */
export function traceLedgerMovement(m: Movement & { amountMinor: number }): void {
  const from = m.lines.filter((l) => l.direction === "debit").map((l) => accountName(l.account));
  const to = m.lines.filter((l) => l.direction === "credit").map((l) => accountName(l.account));
  recordStep(
    Lane.App,
    Lane.Database,
    `money moved: ${(m.amountMinor / 100).toFixed(2)} ${m.currency} from ${from.join(" and ")} to ${to.join(" and ")} (ledger)`,
  );
}

const LAB_KEY_PREFIX = labKeyOf("");

/** The last step of a completer's attempt, in words; none when the attempt threw. */
function completerStep(outcome: KeyOutcome | undefined): string {
  switch (outcome?.outcome) {
    case "completed":
      return `result stored (${outcome.status}): a retry gets it replayed`;
    case "not_ours":
      return outcome.detail === "already finished"
        ? "already finished by another attempt: nothing to do"
        : "another attempt holds the key: that one finishes it";
    case "needs_attention":
      return "not finished: the key needs an operator's attention";
    default:
      return "not finished: the completer tries again later";
  }
}

/**
 * The completer's attempt on a lab run's key, recorded into that run under a
 * lane of its own: its takeover, skipped phases, provider call and ledger
 * movement are then drawn like a client's, so a crash the completer finished
 * before the browser came back tells its whole story, ending with what the
 * completer made of the attempt.
 */
export async function traceCompleterAttempt(
  enabled: () => boolean,
  sql: () => Sql,
  key: string,
  attempt: () => Promise<KeyOutcome>,
): Promise<KeyOutcome> {
  // The prefix first: outside the lab (every real key) nothing else is looked at.
  const run = key.startsWith(LAB_KEY_PREFIX) && enabled() ? await findRun(sql(), key.slice(LAB_KEY_PREFIX.length)) : undefined;
  if (!run) return attempt();
  return withinRun(run, async () => {
    recordStep(Lane.Completer, Lane.App, "completer takes the key up: its lease ran out with no client finishing it");
    let outcome: KeyOutcome | undefined;
    try {
      return (outcome = await attempt());
    } finally {
      recordStep(Lane.App, Lane.Completer, completerStep(outcome));
      await stepsWritten(run.id);
    }
  });
}
