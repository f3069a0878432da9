/**
 * `migrate` on a client as an adopter opens it (`postgres(url)`, no
 * `onnotice`), where postgres-js prints every NOTICE to the console as a raw
 * object: a start on an up-to-date database printed "relation
 * exactly_once_migrations already exists, skipping" (issue 54). Each run goes
 * to a schema of its own on the run's database.
 */
import postgres from "postgres";
import { afterAll, expect, inject, it, vi } from "vitest";
import { migrate, pendingMigrations } from "../src/migrate.js";

const schema = `quiet_${Math.random().toString(36).slice(2, 10)}`;
const sql = postgres(inject("packageDatabaseUrl"), { max: 1 });

afterAll(async () => {
  // One connection (max 1): the setting holds for the drop, whose "drop cascades to" notice is no news either.
  await sql`set client_min_messages to warning`;
  await sql.unsafe(`drop schema if exists ${schema} cascade`);
  await sql.end();
});

it("prints nothing, on a new schema and again on an up-to-date one", async () => {
  const printed = vi.spyOn(console, "log").mockImplementation(() => undefined);
  try {
    expect((await migrate(sql, { schema })).length).toBeGreaterThan(0);
    expect(await migrate(sql, { schema })).toEqual([]);
    expect(printed.mock.calls).toEqual([]);
  } finally {
    printed.mockRestore();
  }
  expect(await pendingMigrations(sql, { schema })).toEqual([]);
});
