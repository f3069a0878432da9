/**
 * The load driver: a fixed number of workers each run one operation after
 * another for a fixed time. The window opens after the warm-up (the pool, the
 * JIT and PostgreSQL's caches settle there) and closes at the deadline;
 * throughput, latencies and CPU are of the operations that finished inside
 * it, all of them under the full concurrency.
 */
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { cpuUse, selfSnapshot, type CpuSnapshot, type CpuUse } from "./cpu";

export type Load = {
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** Taken at both edges of the window; without it only this process's CPU is measured. */
  cpu?: () => Promise<CpuSnapshot>;
};

export type Sample = { opsPerSec: number; p50: number; p99: number; count: number; cpu?: CpuUse };

/** Nearest-rank percentile of ascending `sorted` latencies. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarize(latencies: number[], seconds: number): Sample {
  const sorted = Float64Array.from(latencies).sort();
  return { opsPerSec: sorted.length / seconds, p50: percentile(sorted, 50), p99: percentile(sorted, 99), count: sorted.length };
}

/** Runs `op(n)` (n counts up across all workers) under `load`; a failing operation fails the run. */
export async function drive(op: (n: number) => Promise<void>, load: Load): Promise<Sample> {
  const window: { from?: number; to?: number; cpuFrom?: CpuSnapshot; cpuTo?: CpuSnapshot } = {};
  const failed = new AbortController();
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    while (window.to === undefined) {
      const began = performance.now();
      await op(next++);
      const ended = performance.now();
      if (window.from !== undefined && (window.to === undefined || ended <= window.to)) latencies.push(ended - began);
    }
  };
  // One failure ends the run: the other workers stop at once instead of
  // calling on into a database that is being torn down.
  const stopOnFailure = (error: unknown) => {
    window.to ??= performance.now();
    failed.abort(error);
    throw error;
  };
  // The window's edges are taken when the timers actually fire, so the
  // operations counted and the CPU measured cover the same interval.
  const snapshot = load.cpu ?? (async () => selfSnapshot());
  const clock = (async () => {
    await sleep(load.warmupMs, undefined, { signal: failed.signal });
    window.cpuFrom = await snapshot();
    window.from = performance.now();
    await sleep(load.durationMs, undefined, { signal: failed.signal });
    window.to = performance.now();
    window.cpuTo = await snapshot();
  })();
  await Promise.all([clock, ...Array.from({ length: load.concurrency }, () => worker().catch(stopOnFailure))]);
  const sample = summarize(latencies, (window.to! - window.from!) / 1000);
  return { ...sample, cpu: cpuUse(window.cpuFrom!, window.cpuTo!, Math.max(1, sample.count)) };
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
