/**
 * The one postgres-js client and its Drizzle wrapper, cached on `globalThis`
 * so that hot reloads and Next.js's separate bundles (instrumentation, route
 * handlers) share one pool instead of opening one each.
 */
import { PgDialect } from "drizzle-orm/pg-core";
import { drizzle, PostgresJsDatabase, PostgresJsSession } from "drizzle-orm/postgres-js";
import postgres, { type ReservedSql, type Sql, type TransactionSql } from "postgres";
import * as schema from "./schema";

export type Db = PostgresJsDatabase<typeof schema>;
export type Database = { sql: Sql; db: Db; url: string };

type Holder = { __eoDatabase?: Database; __eoReplica?: Sql; __eoHeldConnections?: { count: number } };
const holder = globalThis as Holder;

/**
 * `pooled`: behind a transaction-mode pooler (PgBouncer). `beginWith`: a
 * statement every transaction sends first (the app's SET LOCAL limits, whose
 * text the idempotency middleware owns: the data layer takes it as given).
 */
export type OpenOptions = { max?: number; pooled?: boolean; beginWith?: string };

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

/**
 * Every `sql.begin` (and so every Drizzle `db.transaction`) sends `statement`
 * first (the limits). It is sent without waiting for it: it goes down the
 * connection ahead of the transaction's first query, in the same round trip,
 * and if it failed, postgres-js reports its error for the transaction.
 */
function limitTransactions(pool: Sql, statement: string): void {
  overrideBegin(pool, (begin) => (options, fn) =>
    begin(options, (tx) => {
      void tx.unsafe(statement).execute();
      return fn(tx);
    }),
  );
}

type Begin = (options: string, fn: (tx: TransactionSql) => unknown) => Promise<unknown>;

/** Replaces `pool.begin` by `wrap` of it, for both of its forms (with options and without). */
function overrideBegin(pool: Sql, wrap: (begin: Begin) => Begin): void {
  const wrapped = wrap(pool.begin.bind(pool) as Begin);
  pool.begin = ((options: string | ((tx: TransactionSql) => unknown), fn?: (tx: TransactionSql) => unknown) =>
    typeof options === "function" ? wrapped("", options) : wrapped(options, fn!)) as Sql["begin"];
}

/**
 * Connections the app holds for itself: a reservation from `reserve()` until
 * its release, a transaction (`begin`, Drizzle's `transaction`) from the
 * moment it has its connection until it has committed or rolled back. Each
 * holds exactly one connection that nothing else can use meanwhile, so these
 * are counted exactly. A single statement sent to the pool is not: postgres-js
 * pipelines such statements onto connections that others may be using too,
 * and tells neither which connection one went to nor how many are open or
 * idle (it has no pool statistics). Kept beside the pool on `globalThis`:
 * the bundle that scrapes may not be the one that opened the pool.
 */
const held = (holder.__eoHeldConnections ??= { count: 0 });

/** Connections held by a reservation or a transaction right now (the pool gauge reads it when scraped). */
export const heldConnections = (): number => held.count;

function countHeldConnections(pool: Sql): void {
  const reserve = pool.reserve.bind(pool);
  pool.reserve = async () => {
    const reserved = await reserve();
    held.count++;
    const release = reserved.release;
    let released = false;
    reserved.release = () => {
      if (!released) held.count--;
      released = true;
      release();
    };
    return reserved;
  };
  overrideBegin(pool, (begin) => async (options, fn) => {
    let holding = false;
    try {
      return await begin(options, (tx) => {
        holding = true;
        held.count++;
        return fn(tx);
      });
    } finally {
      if (holding) held.count--;
    }
  });
}

/**
 * Seconds before a connection that failed is tried again. postgres-js grows
 * this to 10-20 s over a long outage, so a database back after a minute would
 * wait that long for its first connection; at most 1 s, the server serves
 * again within about a second of the database's return.
 */
export const reconnectBackoff = (attempt: number) => Math.min(0.05 * 2 ** attempt, 1);

/** Opens the pool for `url` once; later calls return the same pool. */
export function openDatabase(url: string, options: OpenOptions = {}): Database {
  if (holder.__eoDatabase) return holder.__eoDatabase;
  const client = postgres(url, {
    max: options.max ?? 20,
    onnotice: () => {},
    // A transaction pooler hands each transaction whichever server connection
    // is free, where a statement prepared by another one does not exist.
    prepare: !options.pooled,
    // A connection to a database that went away is retried on the next query,
    // with at most this long spent on each attempt to connect.
    connect_timeout: 5,
    backoff: reconnectBackoff,
  });
  if (options.beginWith) limitTransactions(client, options.beginWith);
  countHeldConnections(client);
  holder.__eoDatabase = { sql: client, db: drizzle({ client, schema }), url };
  return holder.__eoDatabase;
}

/**
 * A small pool on a standby (`url`), opened once, for reads that may lag the
 * primary by a moment: the admin dashboard's lists, counts and activity.
 * Never the middleware's decisions, nor anything a write of this request
 * must see. Read-only by construction: a standby refuses writes.
 */
export function openReplica(url: string): Sql {
  return (holder.__eoReplica ??= postgres(url, { max: 4, onnotice: () => {}, connect_timeout: 5, backoff: reconnectBackoff }));
}

/** The open pool: start-up (ensureDatabase) or a test's set-up opened it. */
export function database(): Database {
  if (holder.__eoDatabase) return holder.__eoDatabase;
  throw new Error("The database is not started: call ensureDatabase() at start-up, or openDatabase().");
}

export async function closeReplica(): Promise<void> {
  const replica = holder.__eoReplica;
  holder.__eoReplica = undefined;
  await replica?.end({ timeout: 5 });
}

export async function closeDatabase(): Promise<void> {
  const open = holder.__eoDatabase;
  holder.__eoDatabase = undefined;
  await open?.sql.end({ timeout: 5 });
  await closeReplica();
}

/**
 * Drizzle over one reserved connection on which the caller has begun a
 * transaction, so the idempotency middleware can pipeline its own statements
 * with BEGIN and COMMIT around the handler's queries. It reuses the pool's
 * relational schema (extracted once, when the pool opened) instead of building
 * it per request, so `tx.query.*` works there as it does on the pool's `db`.
 */
const dialect = new PgDialect();

export function drizzleOn(connection: ReservedSql): Db {
  const pool = database().db._;
  const schemaConfig = { fullSchema: pool.fullSchema, schema: pool.schema!, tableNamesMap: pool.tableNamesMap };
  return new PostgresJsDatabase(dialect, new PostgresJsSession(connection, dialect, schemaConfig), schemaConfig);
}
