/**
 * What the lab's sequence diagram is drawn from: the app's own events, as
 * its ports report them (the middleware's onEvent, the provider client's
 * observer, the ledger's observer, the completer's attempts), turned into
 * steps of the current lab run as they happen. Each function is a no-op
 * outside a lab run.
 */
import type { Sql } from "postgres";
import { IdempotencyEventType, type IdempotencyEvent, type KeyCompletion } from "@exactly-once/trpc";
import { Book, type Movement } from "../ledger/post";
import type { ObservedCall as ProviderCall } from "../psp/client";
import { currentRun, findRun, Lane, recordStep, stepsWritten, withinRun, type Words } from "./runs";
import { labKeyOf, LabTarget } from "./scenarios";

/** A duration as people say it: "3.1 s", "250 ms". */
const seconds = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);

/** What a recovery point stands for, in the shop's words (the checkout's phases: server/orders, server/payments/charge.ts). */
const POINT_NAMES: Record<string, string> = { placed: "the order", charged: "the charge's result" };
const pointName = (point: string) => POINT_NAMES[point] ?? `step “${point}”`;

/** A key event in a shopper's words: what the key did for this request, with no fence, phase or lease in sight. */
const PLAIN_KEY_EVENTS: Partial<Record<IdempotencyEvent["type"], string>> = {
  [IdempotencyEventType.Claimed]: "a new key: this request goes ahead with the payment",
  [IdempotencyEventType.Replayed]: "this key has paid already: the saved answer is sent again, nothing is charged",
  [IdempotencyEventType.Conflict]: "another request is still paying with this key: try again in a moment",
  [IdempotencyEventType.Mismatch]: "this key was used for a different purchase: refused",
  [IdempotencyEventType.Takeover]: "the earlier attempt went quiet: this one takes the payment over, resuming where it stopped",
  [IdempotencyEventType.Completed]: "answer saved with the key: a repeat gets this same answer",
  [IdempotencyEventType.Released]: "not paid yet: the key is freed so a retry can finish the payment",
  [IdempotencyEventType.LeaseLost]: "this attempt ran out of time with the key: it stops, and another finishes",
};

/** A key event, as the database decided it (claim, replay, conflict, takeover, a phase committed or skipped…). */
export function traceKeyEvent(e: IdempotencyEvent): void {
  // Every key event of every request comes here; outside a lab run there is no step to word.
  const run = currentRun();
  if (!run) return;
  if (e.type === IdempotencyEventType.PhaseCommitted || e.type === IdempotencyEventType.PhaseSkipped) {
    const point = e.recoveryPoint ?? "";
    const words =
      e.type === IdempotencyEventType.PhaseCommitted
        ? { plain: `${pointName(point)} saved: a safe point, never done twice`, technical: `phase "${point}" committed (recovery point)` }
        : {
            plain: `${pointName(point)} was saved by the earlier attempt: not done again`,
            technical: `phase "${point}" skipped: committed by an earlier attempt`,
          };
    return recordStep(Lane.App, Lane.Database, words, run);
  }
  if (e.waitedMs !== undefined) {
    // Recorded when the wait ended (the event is reported then), so it is drawn after the attempt it waited for;
    // the diagram draws the wait itself as a bar reaching back to where it began.
    const words = {
      plain: `a repeat waited ${seconds(e.waitedMs)} for the request paying with this key to finish`,
      technical: `waited ${e.waitedMs} ms for the key`,
    };
    return recordStep(Lane.App, Lane.Database, words, run);
  }
  const parts = [`key ${e.type.replace("_", " ")}`];
  if (e.fence !== undefined) parts.push(`fence ${e.fence}`);
  if (e.status !== undefined) parts.push(`status ${e.status}`);
  if (e.recoveryPoint) parts.push(`at ${e.recoveryPoint}`);
  const plain = PLAIN_KEY_EVENTS[e.type] ?? `the key: ${e.type.replace(/_/g, " ")}`;
  recordStep(Lane.App, Lane.Database, { plain, technical: parts.join(", ") }, run);
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

/** The provider's answer in words: whether it did it, failed, refused, or recognised a repeat. */
function plainAnswer(call: ProviderCall): string {
  const { status } = call;
  if (status === undefined) return "the provider did not answer";
  if (call.replayed) return `the provider: “already done for this payment”, so no second charge (${status})`;
  if (status >= 500) return `the provider failed (${status})`;
  if (status >= 400) return `the provider refused (${status})`;
  return `the provider did it (${status})`;
}

/**
 * One request to the provider: its downstream key, and whether the provider
 * answered from its own idempotency. The key is technical detail: the plain
 * words say only whether it is the payment's own (the protected checkout's
 * provider key is derived from its Idempotency-Key; the twin makes one up
 * per request).
 */
export function traceProviderCall(call: ProviderCall): void {
  const ask = `asks the provider to ${providerAsk(call)}`;
  const key = call.key ? `, key ${call.key.slice(0, 12)}…` : "";
  const whose = !call.key
    ? ""
    : currentRun()?.target === LabTarget.Naive
      ? ", with a key made up for this request only"
      : ", with the payment's own key";
  recordStep(Lane.App, Lane.Provider, { plain: `${ask}${whose}`, technical: `${ask}${key}` }, undefined, call.elapsedMs);
  const answer =
    call.status === undefined
      ? "the provider did not answer"
      : `the provider answered ${call.status}${call.replayed ? " from its record of this key: no second charge" : ""}`;
  recordStep(Lane.Provider, Lane.App, { plain: plainAnswer(call), technical: answer });
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
function completerStep(outcome: KeyCompletion | undefined): Words {
  switch (outcome?.outcome) {
    case "completed":
      return {
        plain: `finished (${outcome.status}) and saved: a repeat gets this same answer`,
        technical: `result stored (${outcome.status}): a retry gets it replayed`,
      };
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
export async function traceCompleterAttempt(sql: () => Sql, key: string, attempt: () => Promise<KeyCompletion>): Promise<KeyCompletion> {
  // The prefix first: outside the lab (every real key) nothing else is looked at.
  const run = key.startsWith(LAB_KEY_PREFIX) ? await findRun(sql(), key.slice(LAB_KEY_PREFIX.length)) : undefined;
  if (!run) return attempt();
  return withinRun(run, async () => {
    recordStep(Lane.Completer, Lane.App, {
      plain: "the completer picks the payment up: nobody finished it in time",
      technical: "completer takes the key up: its lease ran out with no client finishing it",
    });
    let outcome: KeyCompletion | undefined;
    try {
      return (outcome = await attempt());
    } finally {
      recordStep(Lane.App, Lane.Completer, completerStep(outcome));
      await stepsWritten(run.id);
    }
  });
}
