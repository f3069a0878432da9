/**
 * The failure lab's scenarios: what the browser does (its plan) and which
 * server-side simulations a run arms. Shared by the page and the server, so
 * it imports nothing from either.
 */

export const LabTarget = {
  /** The real checkout procedure, behind its Idempotency-Key. */
  Protected: "protected",
  /** The deliberately unprotected twin: no key, a fresh provider key on every call. */
  Naive: "naive",
} as const;
export type LabTarget = (typeof LabTarget)[keyof typeof LabTarget];

/** The header that ties a request to its lab run (honoured in demo mode only). */
export const LAB_RUN_HEADER = "Lab-Run";
/** The browser's number for a request of its run, shown in its attempts list and the diagram alike. */
export const LAB_REQUEST_HEADER = "Lab-Request";

export type LabFaults = {
  /** The next answer of the checkout is dropped after the server committed it. */
  loseAnswer?: boolean;
  /** The worker stops dead right after the provider charged: no release, no renewal; its lease is cut to this many ms. */
  crashAfterChargeLeaseMs?: number;
  /** Every provider call of the run finds the provider unreachable, until the lab brings it back (lab.providerBack). */
  providerDown?: boolean;
};

export type LabScenario = {
  id: string;
  title: string;
  /** What happens, in the shopper's words. */
  story: string;
  /** What the shopper does, the start of each run's story; the rest of it is told from what the run recorded. */
  shopper: string;
  /** Which part is simulated, named as such on the page. */
  simulation?: string;
  /** The provider test destination charged. */
  destination: string;
  faults: LabFaults;
  plan:
    | { kind: "together"; clients: number; staggerMs: number }
    | { kind: "retry-after-failure"; timeoutMs: number; pauseMs: number }
    | { kind: "once" }
    | { kind: "webhook-twice" }
    | { kind: "provider-down" };
};

export const SHOP_TEST_DESTINATION = "acct_test_lab";
/** The stand-in answers it after PSP_SLOW_MS: duplicates sent meanwhile really overlap the first request, whatever the machine's speed. */
const SLOW_TEST_DESTINATION = "acct_test_slow";
const CRASH_LEASE_MS = 2_000;

/**
 * The completer's budget for a lab run's key: a page cannot wait the quarter
 * of an hour the completer's own budget (server/keys/completer.ts) spans, so
 * the lab runs its rounds for the run's key with this one.
 */
export const LAB_COMPLETER_BUDGET = { maxAttempts: 3, backoffMs: 250, maxBackoffMs: 1_000 } as const;

export const LAB_SCENARIOS: readonly LabScenario[] = [
  {
    id: "double-click",
    title: "Double-click on Pay",
    story:
      "The shopper clicks Pay twice; both requests leave at once, and the provider takes its time, so the second arrives while the first is still paying.",
    shopper: "Clicked Pay twice",
    destination: SLOW_TEST_DESTINATION,
    faults: {},
    plan: { kind: "together", clients: 2, staggerMs: 0 },
  },
  {
    id: "five-clicks",
    title: "Five impatient clicks",
    story: "Five requests for the same payment, 40 ms apart, while the provider is slow: four arrive during the first.",
    shopper: "Clicked Pay five times in a row",
    destination: SLOW_TEST_DESTINATION,
    faults: {},
    plan: { kind: "together", clients: 5, staggerMs: 40 },
  },
  {
    id: "two-tabs",
    title: "Two tabs, one cart",
    story: "The same cart is paid from two tabs while the provider is slow; the tabs share the cart's key.",
    shopper: "Paid the same cart from two tabs, a moment apart",
    destination: SLOW_TEST_DESTINATION,
    faults: {},
    plan: { kind: "together", clients: 2, staggerMs: 300 },
  },
  {
    id: "lost-answer",
    title: "Answer lost after the server committed",
    story: "The payment goes through, but the answer never reaches the browser, which retries.",
    simulation: "Simulated: the server drops its own answer once, after the payment is committed.",
    shopper: "Clicked Pay once",
    destination: SHOP_TEST_DESTINATION,
    faults: { loseAnswer: true },
    plan: { kind: "retry-after-failure", timeoutMs: 15_000, pauseMs: 200 },
  },
  {
    id: "slow-provider",
    title: "Client timeout on a slow provider",
    story: "The provider takes seconds; the browser gives up after one second and tries again.",
    shopper: "Clicked Pay once",
    destination: SLOW_TEST_DESTINATION,
    faults: {},
    plan: { kind: "retry-after-failure", timeoutMs: 1_000, pauseMs: 200 },
  },
  {
    id: "provider-5xx",
    title: "Provider 5xx, then success",
    story: "The provider fails the first call with a 500; the app retries it with the same provider key.",
    shopper: "Clicked Pay once",
    destination: "acct_test_error",
    faults: {},
    plan: { kind: "once" },
  },
  {
    id: "crash-after-charge",
    title: "Worker crash right after the provider charged",
    story:
      "The charge happened, then the server stopped dead before saving it. Once its claim on the key runs out, a retry takes the payment over.",
    simulation: `Simulated: the server handling the request stops right after the charge, and its claim on the key runs out after ${CRASH_LEASE_MS / 1000} s.`,
    shopper: "Clicked Pay once",
    destination: SHOP_TEST_DESTINATION,
    faults: { crashAfterChargeLeaseMs: CRASH_LEASE_MS },
    plan: { kind: "retry-after-failure", timeoutMs: 1_500, pauseMs: CRASH_LEASE_MS + 500 },
  },
  {
    id: "webhook-twice",
    title: "The same webhook delivered twice at once",
    story: "After a paid order, the provider sends one refund event twice, concurrently.",
    shopper: "Clicked Pay once, and was later refunded part of it",
    destination: SHOP_TEST_DESTINATION,
    faults: {},
    plan: { kind: "webhook-twice" },
  },
  {
    id: "provider-down",
    title: "Provider down for good",
    story:
      "The provider cannot be reached; the shopper gives up and leaves. The completer tries again and again, then gives up: the key needs attention. Once the provider is back, an operator's Resume now finishes the payment.",
    simulation: `Simulated: the provider is unreachable for this run's calls only, until the lab brings it back; the completer gives up after ${LAB_COMPLETER_BUDGET.maxAttempts} attempts a fraction of a second apart (normally 8, over about a quarter of an hour).`,
    shopper: "Clicked Pay once",
    destination: SHOP_TEST_DESTINATION,
    faults: { providerDown: true },
    plan: { kind: "provider-down" },
  },
];

export const scenarioById = (id: string): LabScenario | undefined => LAB_SCENARIOS.find((s) => s.id === id);

/**
 * How many checkouts a naive run of the scenario sends: one per client, and
 * a retry after a failure. The twin has no key, so nothing makes it answer
 * 409 and the browser never sends more; the server refuses any call past it.
 */
export function naiveCallsOf(scenario: LabScenario): number {
  if (scenario.plan.kind === "together") return scenario.plan.clients;
  return scenario.plan.kind === "retry-after-failure" ? 2 : 1;
}

/** The Idempotency-Key of a lab run's checkout: one per run, so its rows are found by it. */
export const labKeyOf = (runId: string) => `lab-${runId}`;
