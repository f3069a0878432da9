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
 * A reserved connection whose socket has closed (the database restarted or
 * went away) must fail its next query, not swallow it: postgres-js 3.4.9
 * buffers such a query and never sends nor settles it (porsager/postgres#1208),
 * so a request would hang on it for ever. The pool tells which connection
 * closed (`onclose`) and, as each query is handed to a connection, which one
 * that is (`debug`); a reservation on a closed connection rejects its next
 * queries with CONNECTION_CLOSED (a 503 for the caller; the database is away)
 * and is not handed back to the pool, which took the connection back itself.
 */
type Reservation = { connection?: number; closed: boolean };
const reservations = new Set<Reservation>();
let handing: Reservation | undefined;

const reservationWatch = {
  debug: (connection: number) => {
    if (handing && handing.connection === undefined) handing.connection = connection;
  },
  onclose: (connection: number) => {
    for (const r of reservations) if (r.connection === connection) r.closed = true;
  },
};

type PendingQuery = { handler: (q: PendingQuery) => void; reject: (error: Error) => void };

function guardReservations(pool: Sql): void {
  const reserve = pool.reserve.bind(pool);
  pool.reserve = async () => {
    const reserved = await reserve();
    const reservation: Reservation = { closed: false };
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
        if (reservation.closed) return q.reject(Object.assign(new Error("The database connection closed."), { code: "CONNECTION_CLOSED" }));
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
    connection: { lock_timeout: LOCK_TIMEOUT_MS },
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
