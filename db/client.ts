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

/** Opens the pool for `url` once; later calls return the same pool. */
export function openDatabase(url: string, options: OpenOptions = {}): Database {
  if (holder.__eoDatabase) return holder.__eoDatabase;
  const client = postgres(url, {
    max: options.max ?? 20,
    onnotice: () => {},
    // No statement waits longer than this for a lock; it is also how long a
    // duplicate request waits on a key another request is completing.
    connection: { lock_timeout: LOCK_TIMEOUT_MS },
  });
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
