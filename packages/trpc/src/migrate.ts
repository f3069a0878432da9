/**
 * The package's own SQL: the migrations in `migrations/` (shipped in the
 * package), applied in name order, each in a transaction together with its
 * line in the package's own record (`exactly_once_migrations`), so an app's
 * migrator never needs to know them. An advisory transaction lock makes
 * concurrent starts (two instances, a CLI) apply each migration once.
 *
 * `schema` places the table (and the record) in a schema of the app's
 * choosing; the middleware's statements name the table unqualified, so that
 * schema must then be on the pool's `search_path`.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Sql } from "postgres";

export type MigrateOptions = {
  /** The schema for the key table and the package's migration record; `public` by default. */
  schema?: string;
};

/** `migrations/` beside `src/` and `dist/` alike. */
const folder = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** Any fixed number: the key under which concurrent migrators wait for each other. */
const MIGRATE_LOCK = 7_313_022;

/** The package's migrations, in the order they apply. */
const migrationNames = async () => (await readdir(folder)).filter((name) => name.endsWith(".sql")).sort();

/** Applies the package's pending migrations; returns the names it applied (none when up to date). */
export async function migrate(sql: Sql, options: MigrateOptions = {}): Promise<string[]> {
  const schema = options.schema ?? "public";
  const applied: string[] = [];
  for (const name of await migrationNames()) {
    const text = await readFile(path.join(folder, name), "utf8");
    const ran = await sql.begin(async (tx) => {
      // Quiet whatever client the app passes: "already exists, skipping" on every start is no news, and postgres-js
      // prints each NOTICE as a raw object unless the app set `onnotice`. Warnings and errors still come through.
      await tx`set local client_min_messages to warning`;
      await tx`select pg_advisory_xact_lock(${MIGRATE_LOCK})`;
      // Creating a schema needs the CREATE privilege on the database, which `public` (always there) must not ask for.
      if (schema !== "public") await tx`create schema if not exists ${tx(schema)}`;
      await tx.unsafe(`set local search_path to ${quoteIdent(schema)}`);
      await tx`create table if not exists exactly_once_migrations (name text primary key, applied_at timestamptz not null default now())`;
      const done = await tx`select 1 from exactly_once_migrations where name = ${name}`;
      if (done.length > 0) return false;
      await tx.unsafe(text);
      await tx`insert into exactly_once_migrations (name) values (${name})`;
      return true;
    });
    if (ran) applied.push(name);
  }
  return applied;
}

/**
 * The package's migrations the database has not recorded as applied, in
 * order: what `migrate` would apply. A start that does not migrate asks
 * this to refuse a database its middleware's statements would fail on
 * (say, a package upgrade whose migration nobody ran). Plain reads, so it
 * also works through a transaction pooler.
 */
export async function pendingMigrations(sql: Sql, options: MigrateOptions = {}): Promise<string[]> {
  const schema = options.schema ?? "public";
  const names = await migrationNames();
  const [record] = await sql<
    { present: boolean }[]
  >`select to_regclass(${`${quoteIdent(schema)}.exactly_once_migrations`}) is not null as present`;
  if (!record!.present) return names;
  const applied = new Set((await sql<{ name: string }[]>`select name from ${sql(schema)}.exactly_once_migrations`).map((row) => row.name));
  return names.filter((name) => !applied.has(name));
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
