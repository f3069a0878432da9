/**
 * The committed migrations on an empty database: they apply, re-apply as a
 * no-op, and tolerate concurrent starters; a start that does not migrate
 * (MIGRATE_ON_START=false) refuses a schema that is behind, the app's or
 * the key table's (the package's own migrations), and `npm run db:migrate`
 * refuses a pooler.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import postgres from "postgres";
import { describe, expect, inject, it, onTestFinished } from "vitest";
import { runMigrations, SCHEMA_BEHIND, schemaBehind } from "../../db/migrate";

const run = promisify(execFile);

/** An empty database of the test's own on the run's server, dropped when the test ends. */
async function emptyDatabase(label: string): Promise<string> {
  const server = new URL(inject("directDatabaseUrl"));
  const name = `eo_${label}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  const admin = postgres(server.toString(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  onTestFinished(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  });
  const target = new URL(server);
  target.pathname = `/${name}`;
  return target.toString();
}

/** A CLI as its own process; resolves with its exit code and standard error. */
function cli(script: string, args: string[], env: Record<string, string>) {
  return run(process.execPath, ["--import", "tsx", script, ...args], {
    env: { ...process.env, LOG_LEVEL: "silent", DATABASE_POOLED: "false", MIGRATE_ON_START: "true", ...env },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

describe("migrations", () => {
  it("create every table on an empty database, once, even with three processes starting together", async () => {
    const server = new URL(inject("directDatabaseUrl"));
    const name = `eo_migrate_${Date.now().toString(36)}`;
    const admin = postgres(server.toString(), { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    const target = new URL(server);
    target.pathname = `/${name}`;
    try {
      await Promise.all([runMigrations(target.toString()), runMigrations(target.toString()), runMigrations(target.toString())]);
      await runMigrations(target.toString());
      const db = postgres(target.toString(), { max: 1 });
      const tables = await db<
        { table_name: string }[]
      >`select table_name from information_schema.tables where table_schema = 'public' order by 1`;
      const applied = await db`select count(*)::int as n from drizzle.__drizzle_migrations`;
      await db.end();
      expect(tables.map((t) => t.table_name)).toEqual(
        expect.arrayContaining([
          "api_tokens",
          "idempotency_keys",
          "idempotency_events",
          "ledger_entries",
          "payments",
          "products",
          "tenants",
        ]),
      );
      const journal = (await import("../../db/migrations/meta/_journal.json", { with: { type: "json" } })).default;
      expect(applied[0]!.n).toBe(journal.entries.length);
    } finally {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  });
});

/** A start that does not migrate refuses the database with one line; after `npm run db:migrate` it is up to date and a start works. */
async function refusedUntilMigrated(url: string, check: postgres.Sql) {
  expect(await schemaBehind(check)).toBe(true);
  const refused = await cli("scripts/tenant.ts", ["create", "Too early"], { DATABASE_URL: url, MIGRATE_ON_START: "false" });
  expect(refused.code).toBe(1);
  expect(refused.stderr.trim().split("\n")).toEqual([SCHEMA_BEHIND]);

  const migrated = await cli("scripts/migrate.ts", [], { DATABASE_URL: url, MIGRATE_ON_START: "false" });
  expect(migrated).toMatchObject({ code: 0, stdout: "Migrations applied.\n" });
  expect(await schemaBehind(check)).toBe(false);
  const created = await cli("scripts/tenant.ts", ["create", "In time"], { DATABASE_URL: url, MIGRATE_ON_START: "false" });
  expect(created.code, created.stderr).toBe(0);
}

describe("a start that does not migrate (MIGRATE_ON_START=false)", () => {
  it("refuses a database whose schema is behind with one line, and works once db:migrate has run", async () => {
    const url = await emptyDatabase("behind");
    const check = postgres(url, { max: 1, onnotice: () => {} });
    onTestFinished(() => check.end());
    await refusedUntilMigrated(url, check);
  });

  it("refuses a key table that lacks one of the package's migrations (an upgrade nobody migrated), and works once db:migrate has run", async () => {
    const url = await emptyDatabase("package");
    await runMigrations(url);
    const check = postgres(url, { max: 1, onnotice: () => {} });
    onTestFinished(() => check.end());
    expect(await schemaBehind(check)).toBe(false);
    // The key table as it was before the package's 0001: its column gone, and its record with it.
    await check`alter table idempotency_keys drop column trace_id`;
    await check`delete from exactly_once_migrations where name = '0001_trace_id.sql'`;
    await refusedUntilMigrated(url, check);
    const [column] =
      await check`select 1 from information_schema.columns where table_name = 'idempotency_keys' and column_name = 'trace_id'`;
    expect(column).toBeDefined();
  });

  it("db:migrate refuses a pooler (DATABASE_POOLED=true) with one line, before it connects", async () => {
    const url = await emptyDatabase("pooled");
    const pooled = await cli("scripts/migrate.ts", [], { DATABASE_URL: url, DATABASE_POOLED: "true", MIGRATE_ON_START: "false" });
    expect(pooled.code).toBe(1);
    expect(pooled.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^Migrations hold a session lock, which a transaction pooler cannot keep: run npm run db:migrate with DATABASE_URL set to PostgreSQL itself/,
      ),
    ]);
    const defaults = await cli("scripts/migrate.ts", [], { DATABASE_URL: url, DATABASE_POOLED: "true" });
    expect(defaults.code).toBe(1);
    expect(defaults.stderr).toContain("Invalid environment: MIGRATE_ON_START: must be false when DATABASE_POOLED=true");
    const check = postgres(url, { max: 1, onnotice: () => {} });
    onTestFinished(() => check.end());
    expect(await schemaBehind(check)).toBe(true);
  });
});
