/**
 * The bounds every transaction of the app runs under (server/database.ts
 * puts them on the pool, the idempotency middleware on its transactions).
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
 * Where the limits are set depends on the connection. A direct one carries
 * them from its start (start-up parameters, `connectionLimits`), so no
 * transaction sets them: a fresh key's transaction sends BEGIN alone, as the
 * floor's does. Behind a transaction-mode pooler the session is whichever
 * server connection the pooler hands out for that transaction, and PgBouncer
 * refuses such start-up parameters anyway: there every transaction sets them
 * for itself (SET LOCAL, in a round trip it makes anyway, about 20 µs of
 * PostgreSQL CPU: docs/SCALING.md). On a direct connection a statement
 * outside any transaction (a sweep's DELETE, the event writer's UPDATE)
 * waits for a lock at most lock_timeout as well; behind the pooler it waits
 * for the holding transaction, which these limits bound.
 */
export const TRANSACTION_LIMITS = { lockTimeoutMs: LOCK_TIMEOUT_MS, idleInTransactionTimeoutMs: IDLE_IN_TRANSACTION_TIMEOUT_MS };
