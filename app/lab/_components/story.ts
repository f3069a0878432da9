/**
 * A run's story in four plain sentences: what the shopper did, what went
 * wrong, what the key did, what it cost. Told from what the run recorded
 * (its steps, the browser's attempts, the counts from the provider and the
 * ledger), never from what the scenario expects: a twin that charged twice
 * says twice because the provider counted two charges.
 *
 * The steps are read by their technical labels, the middleware's own terms
 * (server/lab/trace.ts, edge.ts, faults.ts): those are stable; the plain
 * words are for people.
 */
import { LabTarget, type LabScenario } from "@/server/lab/scenarios";
import type { LabReport } from "./lab-api";
import type { BrowserAttempt } from "./run-scenario";

type Step = LabReport["steps"][number];

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

const times = (n: number) => (n === 1 ? "once" : n === 2 ? "twice" : `${n} times`);

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

const REQUEST = /^request #(\d+):/;
const ANSWER = /^answer to #(\d+)/;
/** A duplicate's wait for the key, as the middleware reported it (recorded at the moment it ended). */
export const WAITED = /^waited (\d+) ms for the key/;

export const has = (steps: Step[], pattern: RegExp) => steps.some((s) => pattern.test(s.label));
const count = (steps: Step[], pattern: RegExp) => steps.filter((s) => pattern.test(s.label)).length;

/** What the browser sent, and each retry it made after an answer it did not get or could not use. */
function shopper(scenario: LabScenario, attempts: BrowserAttempt[], target: LabTarget): string {
  const sent = attempts.filter((a) => a.outcome === "sent");
  const parts = [`the browser sent ${plural(sent.length, "payment request")}`];
  for (const a of attempts) {
    if (a.outcome === "sent" || a.request === undefined) continue;
    const retry = sent.find((s) => s.client === a.client && s.request !== undefined && s.request > a.request!);
    if (!retry) continue;
    const sentAt = sent.find((s) => s.request === a.request)?.at ?? 0;
    const why = /timeout/.test(a.outcome)
      ? `it gave up waiting for #${a.request} after ${seconds(a.at - sentAt)}`
      : /no answer/.test(a.outcome)
        ? `#${a.request} got no answer (the connection dropped)`
        : a.outcome.startsWith("409")
          ? `#${a.request} was told the payment was still in progress`
          : `#${a.request} got an error (${a.outcome})`;
    parts.push(
      `${why}, so it sent the same purchase again as #${retry.request}${target === LabTarget.Protected ? ", with the same key" : ""}`,
    );
  }
  if (attempts.some((a) => /gives up and leaves/.test(a.outcome))) parts.push("then the shopper gave up and left");
  const browser = parts.join("; ");
  return `${scenario.shopper}. ${browser[0]!.toUpperCase()}${browser.slice(1)}.`;
}

/** When each request arrived and was answered, by its number. */
function requestTimes(steps: Step[]): Map<number, { arrived: number; answered?: number }> {
  const byRequest = new Map<number, { arrived: number; answered?: number }>();
  for (const s of steps) {
    const asked = REQUEST.exec(s.label);
    if (asked && s.from === "browser") byRequest.set(Number(asked[1]), { arrived: s.t });
    const answered = ANSWER.exec(s.label);
    const known = answered && byRequest.get(Number(answered[1]));
    if (known && s.to === "browser") known.answered = s.t;
  }
  return byRequest;
}

/** What went wrong, from the steps that show it: a crash, a lost answer, a provider that failed or was slow, requests that overlapped. */
function trouble(steps: Step[]): string {
  const found: string[] = [];
  if (has(steps, /worker stops dead/))
    found.push("The server stopped dead right after the provider charged the card, before it could save the payment (simulated crash).");
  const lost = steps.find((s) => /lost on the way/.test(s.label));
  if (lost) {
    found.push(
      `The payment went through, but the answer to request #${ANSWER.exec(lost.label)?.[1] ?? "1"} was lost on its way back (simulated), so the browser could not know.`,
    );
  }
  const silent = count(steps, /^the provider did not answer$/);
  if (silent > 0) found.push(`The provider could not be reached: ${plural(silent, "call")} got no answer.`);
  const failed = count(steps, /^the provider answered 5\d\d$/);
  if (failed > 0) found.push(`The provider failed ${times(failed)} with an error.`);
  // Requests that arrived while an earlier one was still unanswered: the repeat the key is there for.
  const requests = [...requestTimes(steps).entries()].sort(([a], [b]) => a - b);
  const overlapping = requests.filter(([n, r]) =>
    requests.some(([m, e]) => m < n && e.arrived <= r.arrived && (e.answered ?? Infinity) > r.arrived),
  );
  if (overlapping.length > 0) {
    const slowest = Math.max(0, ...providerTimes(steps));
    found.push(
      `${overlapping.length === 1 ? `Request #${overlapping[0]![0]}` : `Requests ${overlapping.map(([n]) => `#${n}`).join(", ")}`} arrived while an earlier one was still unanswered${slowest >= 1000 ? ` (the provider took ${seconds(slowest)})` : ""}.`,
    );
  }
  const deliveries = count(steps, /^webhook \S+ delivery \d+ sent$/);
  if (deliveries > 1) found.push(`The provider sent the same refund notice ${times(deliveries)}, at the same moment.`);
  return found.length > 0 ? found.join(" ") : "Nothing went wrong.";
}

/** How long each provider call took: from the ask (drawn when it left) to its answer. */
function providerTimes(steps: Step[]): number[] {
  return steps.flatMap((s, i) => {
    if (s.from !== "app" || s.to !== "provider" || !/^asks the provider/.test(s.label)) return [];
    const answer = steps.slice(i + 1).find((a) => a.from === "provider" && /^the provider (answered|did not answer)/.test(a.label));
    return answer ? [answer.t - s.t] : [];
  });
}

/** What the key (or, for notices, the record of notices) did; for the twin, what having none did. */
function keyStory(report: LabReport, target: LabTarget, requests: number): string {
  const { steps, attention } = report;
  if (target === LabTarget.Naive) {
    if (has(steps, /applied \(the twin keeps no record of events\)/))
      return `No record of notices: the twin applied the refund notice ${times(count(steps, /applied \(the twin keeps no record/))}.`;
    if (has(steps, /^no key, so nothing for the completer/))
      return "No key: once the shopper left, nothing could pick the payment up again.";
    return requests > 1
      ? `No key: the shop could not tell a repeat from a new purchase, so each of the ${requests} requests was paid as a new one.`
      : "No key, but the browser sent only one request: there was no repeat to tell apart.";
  }
  const said: string[] = [];
  const waits = count(steps, WAITED);
  const replays = count(steps, /^key replayed/);
  if (has(steps, /^key takeover/) && has(steps, /worker stops dead/)) {
    const byCompleter = steps.some((s) => s.from === "completer" && s.to === "app");
    const who = byCompleter ? "The completer came first" : "The browser's retry came first";
    const skipped = has(steps, /^phase "placed" skipped/) ? " without placing the order again" : "";
    const recognised = has(steps, /from its record of this key: no second charge$/)
      ? ", and asked the provider again with the payment's own key: the provider recognised it and charged nothing more"
      : "";
    const after = byCompleter
      ? replays > 0
        ? " The browser's retry then got the saved answer."
        : ""
      : " Had the browser stayed away, the completer would have done the same.";
    said.push(`${who}: once the stopped server's claim on the key ran out, it took the payment over${skipped}${recognised}.${after}`);
  } else if (waits > 0) {
    said.push(
      `${waits === 1 ? "The repeat carried" : `${waits} repeats carried`} the same key: ${waits === 1 ? "it" : "each"} waited for the first request to finish, then got its answer again, charging nothing.`,
    );
  } else if (replays > 0) {
    said.push("The retry carried the same key: the shop found the payment already made and sent the saved answer again, charging nothing.");
  }
  const providerAsks = count(steps, /^asks the provider to charge the card/);
  if (
    providerAsks > 1 &&
    !has(steps, /^key takeover/) &&
    report.counts.providerCharges <= 1 &&
    !has(steps, /^the provider did not answer$/)
  )
    said.push("The shop asked the provider again with the payment's own key, so the provider could not charge twice.");
  if (has(steps, /recognised as a duplicate: nothing applied/))
    said.push(
      "The shop keeps the id of every notice it applied: the second delivery was recognised and nothing was refunded twice in its books.",
    );
  if (attention) {
    // Only once the completer gave up: a completer that finished a crashed payment on its own is told above.
    if (attention.finished && has(steps, /^completer gives up after/))
      said.push(
        "The key kept the payment open after the shopper left: the completer gave up, and an operator's Resume now finished it with the same key.",
      );
    else if (attention.needsAttention)
      said.push(
        `The key kept the payment open after the shopper left: the completer tried ${plural(attention.attempts, "time")}, then gave up; it waits for an operator.`,
      );
  }
  return said.length > 0 ? said.join(" ") : "One key for the purchase: nothing had to be repeated.";
}

/** What it cost, from the provider's records and the ledger. */
function cost(report: LabReport): string {
  const { counts, attention } = report;
  const charged = counts.providerCharges;
  const booked = counts.chargeMovements;
  const parts = [
    charged === 0 ? "Not charged" : charged === 1 ? "Charged once" : `Charged ${charged} times for one purchase`,
    booked === charged
      ? booked === 0
        ? "nothing booked"
        : `booked ${times(booked)} in the shop's books`
      : `but booked ${times(booked)} in the shop's books${booked < charged ? ": money taken that the shop has no record of" : ""}`,
  ];
  let text = `${parts.join(booked === charged ? "; " : ", ")}.`;
  if (counts.providerRefunds > 0)
    text += ` Refunded ${times(counts.providerRefunds)} at the provider, booked as refunded ${times(counts.refundMovements)}.`;
  if (charged === 0 && counts.pendingPayments > 0) {
    text += attention?.needsAttention
      ? " The payment is pending, safe: an operator can finish it."
      : " The payment is stuck as pending: nothing can ever finish it.";
  }
  return text;
}

export function storyOf(scenario: LabScenario, report: LabReport, attempts: BrowserAttempt[], target: LabTarget) {
  const requests = attempts.filter((a) => a.outcome === "sent").length;
  return {
    shopper: shopper(scenario, attempts, target),
    trouble: trouble(report.steps),
    key: keyStory(report, target, requests),
    cost: cost(report),
  };
}
