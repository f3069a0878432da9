/**
 * The public surface of the idempotency middleware. Everything outside this
 * folder imports from here; two other entry points exist for reasons of
 * their own: `schema.ts` (read by drizzle-kit through db/schema) and
 * `client/` (the browser's side, which must not pull in the server).
 */
export { createIdempotencyProcedures, REPLAYED_HEADER, type IdempotencyContext, type IdempotencyMeta, type ResponseSink } from "./procedures";
export type { AtomicHandle, IdempotencyRuntime, ProcedureOptions, RecoverableHandle, StoredResponse, TransactionLimits } from "./types";
// The SET LOCAL of those limits, for the app's own transactions outside the middleware.
export { setLocalLimits } from "./transaction";

// The acquisition step and the decision table: a server-side completer finds
// stale keys (`isStale`) and runs their procedure again through a caller; the
// acquisition takes the key over under a new fence and the recoverable
// handler resumes at its recovery point.
export { acquire, decide, Decision, type Attempt, type Owned } from "./acquire";

// Rules every reader shares, and what operators do to keys.
export { DISPLAY_STATES, DisplayState, generation, isExpired, isStale, STORED_STATES } from "./rules";
// The downstream key a recoverable holder sends the provider, so a reader (the admin) can ask the provider what became of it.
export { downstreamKeyOf } from "./recoverable";
export { deleteExpired, hasExpiredKeys, releaseKey, type CleanupOptions, type Released } from "./operator";

export { canonicalJson, fingerprint } from "./canonical";
export * from "./errors";
export { IdempotencyEventType, type IdempotencyEvent, type IdempotencyEventSink } from "./events";
export { IDEMPOTENCY_KEY_HEADER } from "./key";
export { idempotencyKeys, KeyState, type IdempotencyRecord } from "./schema";

// The completer's schedule: claim due keys (SKIP LOCKED, backoff), record what an attempt came to.
export {
  claimDue,
  giveUp,
  markCompletedByCompleter,
  recordCompleterFailure,
  storedInput,
  type ClaimOptions,
  type CompletionPolicy,
  type DueKey,
} from "./completion";
export { isDue, needsAttention } from "./rules";
export { CompletedBy } from "./schema";
