/**
 * `@exactly-once/trpc`: the server side. What an app needs and nothing more:
 * the procedure builders and their runtime options, the migration, the
 * completer and the expiry sweep it starts, what operators do to keys, the
 * SQL rules an operator's views read keys by, the errors and events.
 * Two other entry points: `./client` (the browser's link, which must not pull
 * in the server) and `./drizzle` (the table, for apps that use Drizzle).
 */
export { createIdempotencyProcedures, type IdempotencyMeta } from "./procedures.js";
// What the middleware decided for a call, returned with its result, and the headers it adds to a tRPC answer.
export { outcomeHeaders, REPLAYED_HEADER, runIdempotent, type CallResult, type IdempotentCall } from "./outcome.js";
export { createRuntime, type RuntimeOptions } from "./runtime.js";
export type {
  Around,
  AtomicHandle,
  IdempotencyContext,
  IdempotencyEventSink,
  IdempotencyOutcome,
  IdempotencyRuntime,
  Json,
  ProcedureOptions,
  RecoverableHandle,
  StoredResponse,
  TransactionLimits,
} from "./types.js";
// The limits on a pool's connections from their start, or as the SET LOCAL of the app's own transactions.
export { connectionLimits, setLocalLimits } from "./transaction.js";
export { migrate, pendingMigrations, type MigrateOptions } from "./migrate.js";

// Finishing keys whose client never came back, and deleting expired ones.
export {
  completionPolicy,
  createCompleter,
  NotResumableError,
  settleWithinMs,
  type Completer,
  type CompleterOptions,
  type CompletionPolicy,
  type DueRef,
  type KeyCompletion,
  type Rerun,
  type RunOptions,
} from "./completer.js";
export { startExpirySweep, type ExpirySweepOptions } from "./sweep.js";

// What operators do to keys, and the rules their views read keys by (SQL fragments on an aliased key table).
export { deleteExpired, hasExpiredKeys, releaseKey, type CleanupOptions, type Released } from "./operator.js";
export { DISPLAY_STATES, DisplayState, generation, isExpired, isStale, needsAttention, STORED_STATES } from "./rules.js";
// The downstream key a recoverable holder sends the provider, so an operator can ask the provider what became of it.
export { downstreamKeyOf } from "./recoverable.js";
export { KeyState } from "./states.js";

export { canonicalJson, fingerprint } from "./canonical.js";
export * from "./errors.js";
export { IdempotencyEventType, type IdempotencyEvent } from "./events.js";
export { IDEMPOTENCY_ATTEMPT_HEADER, IDEMPOTENCY_KEY_HEADER } from "./key.js";
