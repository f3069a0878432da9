/**
 * What operators (the admin dashboard, the sweep, `npm run keys:cleanup`) do
 * to keys, so none of them needs store SQL of its own: expiry in paced
 * batches, and releasing a lease by hand.
 */
import type { ISql, Sql } from "postgres";
import { IdempotencyEventType } from "./events.js";
import { KeyState } from "./states.js";
import * as store from "./store.js";
import { isLockTimeout } from "./transaction.js";
import type { IdempotencyEventSink } from "./types.js";

export type CleanupOptions = {
  batchSize?: number;
  /** The share of time spent deleting; the rest is pause, so concurrent writers keep their pace. */
  dutyCycle?: number;
  signal?: AbortSignal;
  /** Only this tenant's keys (an operator's purge); all tenants by default. */
  tenantId?: string;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Deletes expired keys in batches until none are left (or `signal` aborts); returns how many. */
export async function deleteExpired(
  sql: () => Sql,
  onEvent: IdempotencyEventSink | undefined,
  options: CleanupOptions = {},
): Promise<number> {
  const batchSize = options.batchSize ?? 5000;
  const duty = options.dutyCycle ?? 0.25;
  let total = 0;
  while (!options.signal?.aborted) {
    const started = performance.now();
    const deleted = await store.deleteExpiredBatch(sql(), batchSize, options.tenantId);
    total += deleted;
    if (deleted > 0)
      onEvent?.({ type: IdempotencyEventType.Expired, tenantId: options.tenantId ?? "*", key: "*", procedure: "*", count: deleted });
    if (deleted < batchSize) break;
    const busy = performance.now() - started;
    await sleep((busy * (1 - duty)) / duty);
  }
  return total;
}

/** Whether expired keys (of one tenant, or of any) are still waiting for deletion. */
export const hasExpiredKeys = (sql: Sql, tenantId?: string) => store.hasExpired(sql, tenantId);

export type Released =
  | { kind: "released"; fence: number; previousLockedUntil: string | null; wasStale: boolean }
  | { kind: "not-found" }
  | { kind: "not-in-progress"; state: KeyState | "expired" }
  | { kind: "busy" };

/**
 * Ends the lease of an in-progress key now, so the next retry takes it over
 * at once instead of waiting out the lease. Safe even if the holder is alive:
 * the takeover bumps the fence, and a holder whose fence is stale can neither
 * write its next phase nor complete the key. Run it in the caller's
 * transaction to commit it with an audit entry.
 */
export async function releaseKey(q: ISql, ref: store.KeyRef): Promise<Released> {
  const rows = await store.releaseByOperator(q, ref).catch((error: unknown) => {
    if (isLockTimeout(error)) return "busy" as const;
    throw error;
  });
  if (rows === "busy") return { kind: "busy" };
  const row = rows[0];
  if (!row) return { kind: "not-found" };
  if (row.expired || row.state !== KeyState.InProgress) return { kind: "not-in-progress", state: row.expired ? "expired" : row.state };
  return { kind: "released", fence: row.fence, previousLockedUntil: row.previous_locked_until, wasStale: row.lease_over };
}
