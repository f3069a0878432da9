/**
 * The bounds every transaction of the app runs under, set by each
 * transaction for itself (db/client.ts and the idempotency middleware).
 */

/** No statement of a transaction waits longer than this for a lock; it is also how long a duplicate request waits on a key another request is completing. */
export const LOCK_TIMEOUT_MS = 10_000;

/**
 * A safety net, not a mechanism: PostgreSQL ends a session left idle inside a
 * transaction this long, so a transaction the app abandoned (neither COMMIT
 * nor ROLLBACK reached the server) cannot keep its idempotency key's advisory
 * lock, nor its connection, for longer. No transaction of the app waits on
 * anything but its own statements (work that calls another system runs
 * between transactions), so a live one is never idle near this long.
 */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 30_000;

/**
 * Both limits are set by every transaction for itself (SET LOCAL), never on
 * the session: behind a transaction-mode pooler the session is whichever
 * server connection the pooler hands out for that transaction, and PgBouncer
 * refuses such settings as startup parameters anyway. One way for both
 * set-ups, pooled or not: the SET LOCALs ride in a round trip the
 * transaction makes anyway, and cost about 20 µs of PostgreSQL CPU per
 * transaction (docs/SCALING.md). A statement outside any transaction carries
 * no lock_timeout: whatever lock it waits for is held by a transaction, and
 * these limits bound that.
 */
export const TRANSACTION_LIMITS = { lockTimeoutMs: LOCK_TIMEOUT_MS, idleInTransactionTimeoutMs: IDLE_IN_TRANSACTION_TIMEOUT_MS };
