/**
 * The idempotency middleware wired to this app: the pool, Drizzle over the
 * key's transaction, which errors are final (every DomainError), how a stored
 * problem is replayed. Where its events go is given: the composition root
 * (server/app.ts) builds the app's runtime once and hands it to every request
 * through the context; tests build variants (say, a holder that never renews).
 */
import { TRPCError } from "@trpc/server";
import type { Sql } from "postgres";
import type { Database, Db } from "../../db/client";
import { LOCK_TIMEOUT_MS, TRANSACTION_LIMITS } from "../../db/limits";
import { isFinal, problemBody, StoredProblemError, toProblem, trpcCodeFor } from "../errors";
import { deleteExpired, type CleanupOptions, type IdempotencyEventSink, type IdempotencyRuntime } from "@exactly-once/trpc";
import type { EventLog } from "./events";

/** `pool`: the app's pool once start-up has opened it (the root builds this runtime before); `keys`: the settings' retention and lease. */
export const createKeysRuntime = (
  pool: () => Database,
  keys: { ttlMs: number; leaseMs: number },
  onEvent: IdempotencyEventSink,
): IdempotencyRuntime<Db> => ({
  sql: () => pool().sql,
  reserve: () => pool().reserve(),
  transaction: (connection) => pool().drizzleOn(connection),
  finalError: (error) => {
    if (!isFinal(error)) return undefined;
    const problem = toProblem(error);
    return { status: problem.status, body: problemBody(problem) };
  },
  replayError: (stored) => {
    const problem = JSON.parse(stored.body) as ReturnType<typeof toProblem>;
    return new TRPCError({ code: trpcCodeFor(stored.status), message: problem.detail, cause: new StoredProblemError(problem) });
  },
  onEvent,
  defaults: { ...keys, waitMs: LOCK_TIMEOUT_MS },
  limits: TRANSACTION_LIMITS,
});

/** Expiry of stored keys (the sweep, `npm run keys:cleanup`, the admin's purge). */
export const deleteExpiredKeys = ({ sql, events }: { sql: Sql; events: EventLog }, options?: CleanupOptions) =>
  deleteExpired(
    () => sql,
    (event) => events.record(event),
    options,
  );
