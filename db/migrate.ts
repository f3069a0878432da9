/**
 * Applies the committed SQL migrations. Uses a client of its own (max 1) and a
 * session-level advisory lock held until that client ends, so two processes
 * starting together (the app and a CLI, two test workers) never apply the
 * same migration twice. A session lock needs one server session for the whole
 * run: migrations go to PostgreSQL itself, never through a transaction pooler.
 *
 * The idempotency key table is the middleware package's own: after the app's
 * migrations, the package applies its own (`migrate` of @exactly-once/trpc,
 * with its own record of what it applied). On a database whose key table
 * came from the app's older migrations, its baseline changes nothing.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/postgres-js";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { migrate as migrateKeyTable, pendingMigrations as pendingKeyTableMigrations } from "@exactly-once/trpc";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres, { type Sql } from "postgres";

const MIGRATIONS_LOCK = 7_313_001;

export const migrationsFolder = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");

export async function runMigrations(url: string, folder = migrationsFolder): Promise<void> {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await client`select pg_advisory_lock(${MIGRATIONS_LOCK})`;
    await migrate(drizzle({ client }), { migrationsFolder: folder });
    await migrateKeyTable(client);
  } finally {
    await client.end({ timeout: 5 });
  }
}

/** What a start that does not migrate says when the database lacks a committed migration. */
export const SCHEMA_BEHIND = "database schema is behind: run npm run db:migrate";

/**
 * Whether the database lacks a committed migration: one of the app's, by
 * drizzle's own rule (pending when newer than the newest one recorded as
 * applied), or one of the key table's, by the package's record. Plain
 * reads, so it also works through a transaction pooler.
 */
export async function schemaBehind(sql: Sql, folder = migrationsFolder): Promise<boolean> {
  const newest = Math.max(...readMigrationFiles({ migrationsFolder: folder }).map((m) => m.folderMillis));
  const [table] = await sql<{ present: boolean }[]>`select to_regclass('drizzle.__drizzle_migrations') is not null as present`;
  if (!table!.present) return true;
  const [applied] = await sql<{ newest: string | null }[]>`select max(created_at)::text as newest from drizzle.__drizzle_migrations`;
  if (applied!.newest === null || Number(applied!.newest) < newest) return true;
  return (await pendingKeyTableMigrations(sql)).length > 0;
}
