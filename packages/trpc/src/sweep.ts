/**
 * The expiry sweep an app starts in every instance: deletes keys past their
 * retention in paced batches (operator.ts), a round every `everyMs`, never
 * two at once. Stopping aborts a round in progress between batches.
 */
import type { Sql } from "postgres";
import { deleteExpired, type CleanupOptions } from "./operator.js";
import type { IdempotencyEventSink } from "./types.js";

export type ExpirySweepOptions = Pick<CleanupOptions, "batchSize" | "dutyCycle"> & {
  sql: () => Sql;
  /** A round every this many milliseconds; 0 starts nothing. */
  everyMs: number;
  onEvent?: IdempotencyEventSink;
  /** After each round, with how many keys it deleted (a metric, a log line, the app's own clean-up). */
  onRound?: (deleted: number) => Promise<void> | void;
  /** A round that failed (the database away): the next round tries again. */
  onError?: (error: unknown) => void;
};

export function startExpirySweep(options: ExpirySweepOptions): { stop: () => void } {
  if (options.everyMs <= 0) return { stop: () => undefined };
  const controller = new AbortController();
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    deleteExpired(options.sql, options.onEvent, { batchSize: options.batchSize, dutyCycle: options.dutyCycle, signal: controller.signal })
      .then((deleted) => options.onRound?.(deleted))
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => (running = false));
  }, options.everyMs);
  timer.unref();
  return {
    stop: () => {
      controller.abort();
      clearInterval(timer);
    },
  };
}
