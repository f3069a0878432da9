/** The committed migrations on an empty database: they apply, re-apply as a no-op, and tolerate concurrent starters. */
import postgres from "postgres";
import { describe, expect, inject, it } from "vitest";
import { runMigrations } from "../../db/migrate";

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
      const tables = await db<{ table_name: string }[]>`select table_name from information_schema.tables where table_schema = 'public' order by 1`;
      const applied = await db`select count(*)::int as n from drizzle.__drizzle_migrations`;
      await db.end();
      expect(tables.map((t) => t.table_name)).toEqual(
        expect.arrayContaining(["api_tokens", "idempotency_keys", "idempotency_events", "ledger_entries", "payments", "products", "tenants"]),
      );
      const journal = (await import("../../db/migrations/meta/_journal.json", { with: { type: "json" } })).default;
      expect(applied[0]!.n).toBe(journal.entries.length);
    } finally {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  });
});
