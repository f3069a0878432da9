/**
 * The admin dashboard's health strip, computed from the very counters
 * `/api/metrics` exports, so the page and Prometheus never disagree: rates
 * per second over the last five minutes, as `rate(x[5m])` would give for
 * this instance, and the key gauges. The counters are sampled every 15
 * seconds into a five-minute window kept in memory (on `globalThis`, like
 * the registry); a server younger than five minutes rates over its life.
 */
import type { Database } from "../../db/client";
import { availability } from "../../db/availability";
import { refreshKeyStates } from "./key-states";
import { metrics, OutcomeLabel } from "./metrics";

const HEALTH_WINDOW_MS = 5 * 60_000;
const SAMPLE_EVERY_MS = 15_000;

/** The counters the strip rates, each a running total. */
type Totals = {
  requests: number;
  replayed: number;
  conflicts: number;
  mismatches: number;
  failed: number;
  completerRuns: number;
  completerFailures: number;
  providerCalls: number;
  providerFailures: number;
};
type Sample = { at: number; totals: Totals };

type HealthStrip = {
  windowSeconds: number;
  /** How much each counter grew over the window (Prometheus's `increase`). */
  increase: Totals;
  /** Per second over the window (`rate`). */
  rates: Totals;
  keys: { inProgress: number; stale: number; needsAttention: number };
  databaseUp: boolean;
};

async function totals(): Promise<Totals> {
  const m = metrics();
  const [requests, completer, provider] = await Promise.all([m.requests.get(), m.completerRuns.get(), m.pspRequests.get()]);
  const sum = <L extends Record<string, string | number | undefined>>(
    values: { labels: L; value: number }[],
    where: (labels: L) => boolean = () => true,
  ) => values.filter((v) => where(v.labels)).reduce((total, v) => total + v.value, 0);
  const outcome = (wanted: OutcomeLabel) => sum(requests.values, (l) => l.outcome === wanted);
  return {
    requests: sum(requests.values),
    replayed: outcome(OutcomeLabel.Replayed) + outcome(OutcomeLabel.Waited),
    conflicts: outcome(OutcomeLabel.Conflict),
    mismatches: outcome(OutcomeLabel.Mismatch),
    failed: outcome(OutcomeLabel.Failed) + outcome(OutcomeLabel.LeaseLost),
    completerRuns: sum(completer.values),
    // The same set IdempotencyCompleterFailing alerts on (ops/prometheus/alerts.yml).
    completerFailures: sum(completer.values, (l) => l.result !== "completed" && l.result !== "not_ours"),
    providerCalls: sum(provider.values),
    // Unanswered (0) or 5xx, as PaymentProviderFailing counts them.
    providerFailures: sum(provider.values, (l) => l.status === "0" || String(l.status).startsWith("5")),
  };
}

const holder = globalThis as { __eoHealthWindow?: { samples: Sample[]; timer?: NodeJS.Timeout } };
const healthWindow = () => (holder.__eoHealthWindow ??= { samples: [] });

async function sample(now = Date.now()): Promise<Sample> {
  const taken = { at: now, totals: await totals() };
  const w = healthWindow();
  w.samples.push(taken);
  // Keep one sample at or beyond the window's start, so a rate always spans the full five minutes once it can.
  while (w.samples.length > 2 && w.samples[1]!.at <= now - HEALTH_WINDOW_MS) w.samples.shift();
  return taken;
}

/** Starts sampling (server start-up); idempotent. */
export function startHealthWindow(): void {
  const w = healthWindow();
  if (w.timer) return;
  void sample();
  w.timer = setInterval(() => void sample(), SAMPLE_EVERY_MS);
  w.timer.unref();
}

const each = (f: (k: keyof Totals) => number, like: Totals): Totals =>
  Object.fromEntries((Object.keys(like) as (keyof Totals)[]).map((k) => [k, f(k)])) as Totals;

/** Growth and rates between two samples of the counters; a window shorter than a second rates over one second. */
export function between(from: Sample, to: Sample): { increase: Totals; rates: Totals } {
  const seconds = Math.max(1, (to.at - from.at) / 1000);
  const increase = each((k) => Math.max(0, to.totals[k] - from.totals[k]), to.totals);
  return { increase, rates: each((k) => increase[k] / seconds, increase) };
}

export async function healthStrip(pool: Pick<Database, "sql" | "held">): Promise<HealthStrip> {
  startHealthWindow();
  await refreshKeyStates(pool);
  // Read now, not kept: how often the page refreshes must not change the window.
  const now = { at: Date.now(), totals: await totals() };
  const oldest = healthWindow().samples.find((s) => s.at >= now.at - HEALTH_WINDOW_MS) ?? now;
  const keys = await metrics().keys.get();
  const gauge = (state: string) => keys.values.find((v) => v.labels.state === state)?.value ?? 0;
  return {
    windowSeconds: Math.round((now.at - oldest.at) / 1000),
    ...between(oldest, now),
    keys: { inProgress: gauge("in_progress"), stale: gauge("stale"), needsAttention: gauge("needs_attention") },
    databaseUp: availability().databaseUp,
  };
}
