/**
 * The one postgres-js client and its Drizzle wrapper, cached on `globalThis`
 * so that hot reloads and Next.js's separate bundles (instrumentation, route
 * handlers) share one pool instead of opening one each.
 */
import type { Query } from "drizzle-orm";
import type { WithCacheConfig } from "drizzle-orm/cache/core/types";
import { PgDialect, type PgPreparedQuery, type PreparedQueryConfig, type SelectedFieldsOrdered } from "drizzle-orm/pg-core";
import { drizzle, PostgresJsDatabase, PostgresJsSession } from "drizzle-orm/postgres-js";
import type { RelationalSchemaConfig, TablesRelationalConfig } from "drizzle-orm/relations";
import postgres, { type ReservedSql, type Sql, type TransactionSql } from "postgres";
import * as schema from "./schema";

export type Db = PostgresJsDatabase<typeof schema>;
/**
 * The pool with the ways the app holds a connection for itself, each of which
 * counts the connection while held (a transaction also sets the limits of
 * db/limits.ts first; the middleware sets them itself on its reservations):
 * the app's code takes connections only through these, never through
 * `sql.reserve()`, `sql.begin()` or Drizzle's `db.transaction()` (lint rule).
 */
export type Database = {
  sql: Sql;
  db: Db;
  url: string;
  /** A connection of the caller's own until it releases it (the idempotency middleware's key transactions). */
  reserve: () => Promise<ReservedSql>;
  /** A postgres-js transaction that sets the limits first. */
  begin: <T>(work: (tx: TransactionSql) => Promise<T>) => Promise<T>;
  /** The same transaction, as Drizzle. */
  transaction: <T>(work: (tx: Db) => Promise<T>) => Promise<T>;
  /** Drizzle over a connection the caller holds (a reservation, a transaction), with the pool's relational schema. */
  drizzleOn: (connection: ReservedSql | TransactionSql) => Db;
  /**
   * Connections held right now by a reservation or a transaction (the pool
   * gauge reads it when scraped). Each holds exactly one connection that
   * nothing else can use meanwhile, so these are counted exactly. A single
   * statement sent to the pool is not: postgres-js pipelines such statements
   * onto connections that others may be using too, and tells neither which
   * connection one went to nor how many are open or idle (it has no pool
   * statistics).
   */
  held: () => number;
};

type Holder = { __eoDatabase?: Database; __eoReplica?: Sql };
const holder = globalThis as Holder;

/**
 * `pooled`: behind a transaction-mode pooler (PgBouncer). `beginWith`: a
 * statement every transaction sends first; `connection`: settings every
 * connection carries from its start (postgres-js's start-up parameters).
 * The app's limits go in one or the other, as text the idempotency
 * middleware owns: the data layer takes them as given.
 */
export type OpenOptions = { max?: number; pooled?: boolean; beginWith?: string; connection?: Record<string, string> };

/**
 * Seconds before a connection that failed is tried again. postgres-js grows
 * this to 10-20 s over a long outage, so a database back after a minute would
 * wait that long for its first connection; at most 1 s, the server serves
 * again within about a second of the database's return.
 */
export const reconnectBackoff = (attempt: number) => Math.min(0.05 * 2 ** attempt, 1);

/**
 * How a pool talks to a transaction-mode pooler (PgBouncer). It hands each
 * transaction whichever server connection is free, where a statement prepared
 * by another one does not exist. And it hands the server back to its pool at
 * the end of each statement outside a transaction: postgres-js 4.2 writes a
 * statement to be described right behind one in flight, whose answer then
 * goes to another client or never comes (defect 1 of
 * packages/trpc/docs/DRIVERS.md). At 1, nothing waits behind a statement in
 * flight on a connection; a transaction's statements still go out together.
 */
export const POOLED_DRIVER_OPTIONS = { prepare: false, max_pipeline: 1 } as const;

/** Opens the pool for `url` once; later calls return the same pool. */
export function openDatabase(url: string, options: OpenOptions = {}): Database {
  if (holder.__eoDatabase) return holder.__eoDatabase;
  const client = postgres(url, {
    max: options.max ?? 20,
    onnotice: () => {},
    ...(options.pooled ? POOLED_DRIVER_OPTIONS : {}),
    ...(options.connection ? { connection: options.connection } : {}),
    // A connection to a database that went away is retried on the next query,
    // with at most this long spent on each attempt to connect.
    connect_timeout: 5,
    backoff: reconnectBackoff,
  });
  // drizzle() also sets the client's parsers and serializers as Drizzle's column types expect.
  holder.__eoDatabase = withHolds(client, drizzle({ client, schema }), url, options.beginWith);
  return holder.__eoDatabase;
}

const dialect = new PgDialect();

/**
 * Drizzle's session with its statements prepared. Drizzle sends a query
 * unprepared unless it was given a name, and postgres-js then has PostgreSQL
 * parse and describe it before it can bind the parameters: a round trip and
 * a parse more for every statement, every time (a payment's two inserts
 * took four round trips). Named, a statement is parsed once per connection
 * and then only bound (postgres-js keeps 1,000 a connection, dropping the
 * oldest). Behind a transaction-mode pooler the pool's own `prepare: false`
 * wins (POOLED_DRIVER_OPTIONS), as it must.
 */
class PreparedSession<TSchema extends TablesRelationalConfig> extends PostgresJsSession<Sql, typeof schema, TSchema> {
  constructor(client: Sql, config: RelationalSchemaConfig<TSchema>) {
    super(client, dialect, config);
  }

  override prepareQuery<T extends PreparedQueryConfig = PreparedQueryConfig>(
    query: Query,
    fields: SelectedFieldsOrdered | undefined,
    name: string | undefined,
    isResponseInArrayMode: boolean,
    customResultMapper?: (rows: unknown[][]) => T["execute"],
    queryMetadata?: { type: "select" | "update" | "delete" | "insert"; tables: string[] },
    cacheConfig?: WithCacheConfig,
  ): PgPreparedQuery<T> {
    // Drizzle reads a name only as "prepare this"; postgres-js names the statement by its text.
    return super.prepareQuery<T>(query, fields, name ?? "", isResponseInArrayMode, customResultMapper, queryMetadata, cacheConfig);
  }
}

function withHolds(sql: Sql, made: Db, url: string, beginWith: string | undefined): Database {
  let held = 0;
  // The pool's relational schema, extracted once when the pool opened, so `tx.query.*` works on a held connection too.
  const schemaConfig = { fullSchema: made._.fullSchema, schema: made._.schema!, tableNamesMap: made._.tableNamesMap };
  // A held connection answers queries as the pool does; Drizzle's session asks for the pool's type.
  const drizzleOn = (connection: Sql | ReservedSql | TransactionSql): Db =>
    new PostgresJsDatabase(dialect, new PreparedSession(connection as unknown as Sql, schemaConfig), schemaConfig);
  const db = drizzleOn(sql);
  const begin = async <T>(work: (tx: TransactionSql) => Promise<T>): Promise<T> => {
    let holding = false;
    try {
      return (await sql.begin((tx) => {
        holding = true;
        held++;
        // Sent without waiting for it: it goes down the connection ahead of the transaction's first statement, in the
        // same round trip; if it failed, postgres-js reports its error for the transaction.
        if (beginWith) void tx.unsafe(beginWith).execute();
        return work(tx);
      })) as T;
    } finally {
      if (holding) held--;
    }
  };
  return {
    sql,
    db,
    url,
    reserve: async () => {
      const reserved = await sql.reserve();
      held++;
      let released = false;
      const release = () => {
        if (!released) held--;
        released = true;
        reserved.release();
      };
      // A reservation of our own that is postgres-js's in everything (calls and properties) but its release, which
      // also counts: postgres-js's object is left as it is.
      const own = ((...args: Parameters<ReservedSql>) => reserved(...args)) as ReservedSql;
      Object.setPrototypeOf(own, reserved);
      return Object.assign(own, { release });
    },
    begin,
    transaction: (work) => begin((tx) => work(drizzleOn(tx))),
    drizzleOn,
    held: () => held,
  };
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
