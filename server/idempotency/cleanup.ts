/** Expiry: deleting expired keys in small batches, pausing between them so writers keep their pace. */
import type { Sql } from "postgres";
import { sleep } from "./decide";
import { IdempotencyEventType, type IdempotencyEventSink } from "./events";
import { deleteExpiredBatch } from "./store";

export type CleanupOptions = {
  batchSize?: number;
  /** The share of time spent deleting; the rest is pause, so concurrent writers keep their pace. */
  dutyCycle?: number;
  signal?: AbortSignal;
};

export async function deleteExpired(sql: () => Sql, onEvent: IdempotencyEventSink | undefined, options: CleanupOptions = {}): Promise<number> {
  const batchSize = options.batchSize ?? 5000;
  const duty = options.dutyCycle ?? 0.25;
  let total = 0;
  while (!options.signal?.aborted) {
    const started = performance.now();
    const deleted = await deleteExpiredBatch(sql(), batchSize);
    total += deleted;
    if (deleted > 0) onEvent?.({ type: IdempotencyEventType.Expired, tenantId: "*", key: "*", procedure: "*", count: deleted });
    if (deleted < batchSize) break;
    const busy = performance.now() - started;
    await sleep((busy * (1 - duty)) / duty);
  }
  return total;
}
