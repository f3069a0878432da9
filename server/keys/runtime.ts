/**
 * The idempotency middleware wired to this app: the pool, Drizzle over the
 * key's transaction, which errors are final (every DomainError), how a stored
 * problem is replayed, and where events go. The tRPC procedures
 * (server/trpc.ts), the expiry sweep, `npm run keys:cleanup` and the admin
 * all take it from here, so none of them needs the tRPC init module.
 */
import { TRPCError } from "@trpc/server";
import { database, drizzleOn, LOCK_TIMEOUT_MS, TRANSACTION_LIMITS, type Db } from "../../db/client";
import { env } from "../env";
import { isFinal, problemBody, StoredProblemError, toProblem, trpcCodeFor } from "../errors";
import { deleteExpired, type CleanupOptions, type IdempotencyRuntime } from "../idempotency";
import { traceKeyEvent } from "../lab/trace";
import { recordEvent } from "./events";

/** Exported so tests can build variants (say, a holder that never renews). */
export const idempotencyRuntime: IdempotencyRuntime<Db> = {
  sql: () => database().sql,
  transaction: drizzleOn,
  finalError: (error) => {
    if (!isFinal(error)) return undefined;
    const problem = toProblem(error);
    return { status: problem.status, body: problemBody(problem) };
  },
  replayError: (stored) => {
    const problem = JSON.parse(stored.body) as ReturnType<typeof toProblem>;
    return new TRPCError({ code: trpcCodeFor(stored.status), message: problem.detail, cause: new StoredProblemError(problem) });
  },
  onEvent: (event) => {
    recordEvent(event);
    // The failure lab's diagram; a no-op outside a lab run.
    traceKeyEvent(event);
  },
  defaults: { ttlMs: env.IDEMPOTENCY_TTL_MS, leaseMs: env.IDEMPOTENCY_LEASE_MS, waitMs: LOCK_TIMEOUT_MS },
  limits: TRANSACTION_LIMITS,
};

/** Expiry of stored keys (the sweep, `npm run keys:cleanup`, the admin's purge). */
export const deleteExpiredKeys = (options?: CleanupOptions) => deleteExpired(idempotencyRuntime.sql, recordEvent, options);
