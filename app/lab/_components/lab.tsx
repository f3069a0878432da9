"use client";
/**
 * The failure lab: pick a scenario, run it against the protected checkout
 * and then against the unprotected twin, and see side by side what each
 * really did — its story in plain words, counts from the provider and the
 * ledger, the browser's own attempts, and the sequence of recorded steps
 * (in plain words, or in the middleware's terms in the technical view).
 */
import { useState, useSyncExternalStore } from "react";
import { LabTarget, type LabScenario } from "@/server/lab/scenarios";
import { AttentionStory } from "./attention-story";
import { reportOf, startRun, type Cart, type LabReport } from "./lab-api";
import { playScenario, type BrowserAttempt } from "./run-scenario";
import styles from "./lab.module.css";
import { SequenceDiagram } from "./sequence-diagram";
import { plural, storyOf } from "./story";

type Outcome = { runId: string; report: LabReport; attempts: BrowserAttempt[] };
type Results = Partial<Record<LabTarget, Outcome>>;

const TARGET_TITLE: Record<LabTarget, string> = {
  [LabTarget.Protected]: "Protected checkout (with Idempotency-Key)",
  [LabTarget.Naive]: "Unprotected twin (no key) — for comparison only",
};

/** The server's refusal in its own words; anything else (no answer) in `fallback`'s. */
const failureText = (error: unknown, fallback: string) =>
  error instanceof Error && error.name === "LabRequestError" ? error.message : fallback;

// True once React runs in the browser: before that a click on Run or a scenario would reach no handler and be lost.
const noSubscription = () => () => {};
const useHydrated = () =>
  useSyncExternalStore(
    noSubscription,
    () => true,
    () => false,
  );

export function Lab({ scenarios, cart, productName }: { scenarios: LabScenario[]; cart: Cart; productName: string }) {
  const [scenario, setScenario] = useState(scenarios[0]!);
  const [running, setRunning] = useState<LabTarget | null>(null);
  const [results, setResults] = useState<{ scenario: LabScenario; byTarget: Results } | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [technical, setTechnical] = useState(false);
  const hydrated = useHydrated();
  const idle = hydrated && running === null;

  async function run() {
    setFailure(null);
    const byTarget: Results = {};
    setResults({ scenario, byTarget });
    try {
      for (const target of [LabTarget.Protected, LabTarget.Naive]) {
        setRunning(target);
        const start = await startRun(scenario.id, target);
        const attempts = await playScenario(scenario, start, target, cart);
        byTarget[target] = { runId: start.runId, report: await reportOf(start.runId), attempts };
        setResults({ scenario, byTarget: { ...byTarget } });
      }
    } catch (error) {
      setFailure(failureText(error, "The run stopped: the lab could not reach the server."));
    } finally {
      setRunning(null);
    }
  }

  /** Reads a side's counts again (after an operator acted on its key in the admin). */
  async function recount(target: LabTarget, outcome: Outcome) {
    try {
      const report = await reportOf(outcome.runId);
      setResults((current) => (current ? { ...current, byTarget: { ...current.byTarget, [target]: { ...outcome, report } } } : current));
    } catch (error) {
      setFailure(failureText(error, "The lab could not reach the server."));
    }
  }

  return (
    <>
      <section className="card lab-controls" aria-labelledby="lab-pick">
        <h2 id="lab-pick">Pick a failure</h2>
        <fieldset className="lab-scenarios">
          <legend className="visually-hidden">Scenario</legend>
          {scenarios.map((s) => (
            <label key={s.id} className="lab-scenario">
              <input
                type="radio"
                name="scenario"
                value={s.id}
                checked={s.id === scenario.id}
                onChange={() => setScenario(s)}
                disabled={!idle}
              />
              <span>
                <strong>{s.title}</strong>
                <span className="small muted"> {s.story}</span>
                {s.simulation ? <span className="small lab-simulated"> {s.simulation}</span> : null}
              </span>
            </label>
          ))}
        </fieldset>
        <p className="small muted">Each run buys one {productName}. The twin runs second, after the protected checkout has finished.</p>
        <button type="button" onClick={() => void run()} disabled={!idle} aria-busy={running !== null}>
          {running === null
            ? "Run scenario"
            : running === LabTarget.Protected
              ? "Running the protected checkout…"
              : "Running the unprotected twin…"}
        </button>
        <p role="status" className="small">
          {running !== null
            ? `Running “${scenario.title}”…`
            : results
              ? `${failure ? "Stopped" : "Finished"} “${results.scenario.title}”.`
              : ""}
        </p>
        {failure ? <p className="error">{failure}</p> : null}
      </section>

      {results ? (
        <>
          <label className={styles.view}>
            <input type="checkbox" checked={technical} onChange={(e) => setTechnical(e.target.checked)} />
            <span>
              Technical view <span className="small muted">(the steps in the terms the code and its docs use)</span>
            </span>
          </label>
          <div className="lab-results">
            {[LabTarget.Protected, LabTarget.Naive].map((target) => {
              const outcome = results.byTarget[target];
              return (
                <section key={target} className={`card lab-result lab-${target}`} aria-labelledby={`lab-${target}-title`}>
                  <h2 id={`lab-${target}-title`}>{TARGET_TITLE[target]}</h2>
                  {outcome ? (
                    <Outcome
                      outcome={outcome}
                      target={target}
                      scenario={results.scenario}
                      technical={technical}
                      recount={() => recount(target, outcome)}
                    />
                  ) : (
                    <p className="muted">{running === target ? "Running…" : "Waiting."}</p>
                  )}
                </section>
              );
            })}
          </div>
        </>
      ) : null}
    </>
  );
}

/** The verdict over a side's counts: the bad outcome named, a key waiting for an operator named as such. */
function verdict(report: LabReport): { text: string; tone: "good" | "bad" | "wait" } {
  const { counts, attention } = report;
  if (counts.providerCharges > 1) return { text: `Charged ${plural(counts.providerCharges, "time")} for one purchase.`, tone: "bad" };
  if (counts.refundMovements > counts.providerRefunds)
    return { text: `One refund at the provider, booked ${plural(counts.refundMovements, "time")}.`, tone: "bad" };
  if (counts.providerCharges === 0 && counts.pendingPayments > 0) {
    return attention?.needsAttention
      ? { text: "Not charged yet: the key needs attention, and an operator can finish it.", tone: "wait" }
      : { text: "Payment lost: left pending, with nothing that could ever finish it.", tone: "bad" };
  }
  return { text: "Exactly once.", tone: "good" };
}

const STORY_PARTS = [
  ["shopper", "What the shopper did"],
  ["trouble", "What went wrong"],
  ["key", "What the key did"],
  ["cost", "What it cost"],
] as const;

/** Each count's title, the end of its test id, and its value. */
const COUNTS: [string, string, (counts: LabReport["counts"]) => string | number][] = [
  ["Charges at the provider", "provider-charges", (c) => c.providerCharges],
  ["Ledger charge movements", "charge-movements", (c) => c.chargeMovements],
  ["Payments recorded", "payments", (c) => c.payments],
  ["Refunds at the provider / refund movements", "refunds", (c) => `${c.providerRefunds} / ${c.refundMovements}`],
];

type OutcomeProps = { outcome: Outcome; target: LabTarget; scenario: LabScenario; technical: boolean; recount: () => Promise<void> };

function Outcome({ outcome, target, scenario, technical, recount }: OutcomeProps) {
  const { counts, steps, key } = outcome.report;
  const { text, tone } = verdict(outcome.report);
  const story = storyOf(scenario, outcome.report, outcome.attempts, target);
  return (
    <>
      <dl className={styles.story} aria-label="The run's story" data-testid={`${target}-story`}>
        {STORY_PARTS.map(([part, title]) => (
          <div key={part}>
            <dt>{target === LabTarget.Naive && part === "key" ? "Without a key" : title}</dt>
            <dd data-testid={`${target}-story-${part}`}>{story[part]}</dd>
          </div>
        ))}
      </dl>
      <p className={`lab-verdict lab-verdict-${tone}`} data-testid={`${target}-verdict`}>
        {text}
      </p>
      {outcome.report.scenario === "provider-down" ? <AttentionStory report={outcome.report} recount={recount} /> : null}
      <p className="small">
        {key ? (
          <>
            Idempotency-Key <code data-testid={`${target}-key`}>{key}</code>
          </>
        ) : (
          "No Idempotency-Key: every request is a new payment."
        )}{" "}
        Payments:{" "}
        <span className="mono" data-testid={`${target}-payment-ids`}>
          {counts.paymentIds.join(" ") || "none"}
        </span>
      </p>
      <dl className="lab-counts" aria-label="What really happened">
        {COUNTS.map(([title, testId, value]) => (
          <div key={testId}>
            <dt>{title}</dt>
            <dd data-testid={`${target}-${testId}`}>{value(counts)}</dd>
          </div>
        ))}
      </dl>
      <h3>The browser&apos;s attempts</h3>
      <p className="small muted">ms after request #1 left the browser; #n is the same request as in the diagram.</p>
      <ol className="small lab-attempts" data-testid={`${target}-attempts`}>
        {outcome.attempts.map((a, i) => (
          <li key={i}>
            <span className="mono">{a.at.toFixed(1)} ms</span> — {outcome.attempts.some((x) => x.client > 1) ? `client ${a.client}, ` : ""}
            {a.request !== undefined ? `request #${a.request}: ` : ""}
            {a.outcome}
          </li>
        ))}
      </ol>
      <h3>What happened, in order</h3>
      <SequenceDiagram steps={steps} title={TARGET_TITLE[target]} id={target} technical={technical} />
    </>
  );
}
