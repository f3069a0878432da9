/**
 * The one postgres-js client and its Drizzle wrapper, cached on `globalThis`
 * so that hot reloads and Next.js's separate bundles (instrumentation, route
 * handlers) share one pool instead of opening one each.
 */
import { PgDialect } from "drizzle-orm/pg-core";
import { drizzle, PostgresJsDatabase, PostgresJsSession } from "drizzle-orm/postgres-js";
import postgres, { type ReservedSql, type Sql } from "postgres";
import { env } from "../server/env";
import * as schema from "./schema";

export type Db = PostgresJsDatabase<typeof schema>;
export type Database = { sql: Sql; db: Db; url: string };

type Holder = { __eoDatabase?: Database };
const holder = globalThis as Holder;

export type OpenOptions = { max?: number };

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
 * A reserved connection whose socket has closed (the database restarted or
 * went away) must fail its queries, not swallow them: postgres-js 3.4.9 never
 * settles a reservation's query that waits in the reservation's own queue
 * (the connection was busy with the earlier statements of its pipeline) when
 * the socket closes, nor one sent after the close (porsager/postgres#1208), so
 * a request would hang on it for ever, holding its reservation. The pool
 * tells which connection closed (`onclose`) and, as each query is handed to a
 * connection, which one that is (`debug`). A reservation on a closed
 * connection rejects every query of its still unsettled, and each later one,
 * with CONNECTION_CLOSED (a 503 for the caller; the database is away), and is
 * not handed back to the pool, which took the connection back itself.
 */
type PendingQuery = {
  handler: (q: PendingQuery) => void;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
};
type Reservation = { connection?: number; closed: boolean; unsettled: Set<PendingQuery> };
const reservations = new Set<Reservation>();
let handing: Reservation | undefined;

const connectionClosed = () => Object.assign(new Error("The database connection closed."), { code: "CONNECTION_CLOSED" });

const reservationWatch = {
  debug: (connection: number) => {
    if (handing && handing.connection === undefined) handing.connection = connection;
  },
  onclose: (connection: number) => {
    for (const r of reservations) {
      if (r.connection !== connection) continue;
      r.closed = true;
      // Those the connection had sent it rejected itself; rejecting them again does nothing.
      for (const q of r.unsettled) q.reject(connectionClosed());
    }
  },
};

function guardReservations(pool: Sql): void {
  const reserve = pool.reserve.bind(pool);
  pool.reserve = async () => {
    const reserved = await reserve();
    const reservation: Reservation = { closed: false, unsettled: new Set() };
    reservations.add(reservation);
    const release = reserved.release;
    reserved.release = () => {
      reservations.delete(reservation);
      if (!reservation.closed) release();
    };
    const guard = <Q>(query: Q): Q => {
      const pending = query as unknown as PendingQuery;
      const send = pending.handler;
      pending.handler = (q) => {
        if (reservation.closed) return q.reject(connectionClosed());
        const { resolve, reject } = q;
        reservation.unsettled.add(q);
        q.resolve = (value) => (reservation.unsettled.delete(q), resolve(value));
        q.reject = (error) => (reservation.unsettled.delete(q), reject(error));
        handing = reservation;
        try {
          send(q);
        } finally {
          handing = undefined;
        }
      };
      return query;
    };
    return new Proxy(reserved, {
      apply: (target, self, args) => guard(Reflect.apply(target, self, args)),
      get: (target, prop, receiver) => {
        const value: unknown = Reflect.get(target, prop, receiver);
        return prop === "unsafe" ? (...args: Parameters<Sql["unsafe"]>) => guard(target.unsafe(...args)) : value;
      },
    });
  };
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
    // No statement waits longer than this for a lock; it is also how long a
    // duplicate request waits on a key another request is completing.
    connection: { lock_timeout: LOCK_TIMEOUT_MS, idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS },
    // A connection to a database that went away is retried on the next query,
    // with at most this long spent on each attempt to connect.
    connect_timeout: 5,
    backoff: reconnectBackoff,
    ...reservationWatch,
  });
  guardReservations(client);
  holder.__eoDatabase = { sql: client, db: drizzle({ client, schema }), url };
  return holder.__eoDatabase;
}

/** The open pool; opens it from DATABASE_URL when start-up has not done so. */
export function database(): Database {
  if (holder.__eoDatabase) return holder.__eoDatabase;
  if (!env.DATABASE_URL) {
    throw new Error("The database is not started: call ensureDatabase() at start-up or set DATABASE_URL.");
  }
  return openDatabase(env.DATABASE_URL);
}

export async function closeDatabase(): Promise<void> {
  const open = holder.__eoDatabase;
  holder.__eoDatabase = undefined;
  await open?.sql.end({ timeout: 5 });
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
