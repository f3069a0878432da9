/**
 * Applies the committed SQL migrations. Uses a client of its own (max 1) and a
 * transaction-level advisory lock, so two processes starting together (the app
 * and a CLI, two test workers) never apply the same migration twice.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";

const MIGRATIONS_LOCK = 7_313_001;

export const migrationsFolder = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");

export async function runMigrations(url: string, folder = migrationsFolder): Promise<void> {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await client`select pg_advisory_lock(${MIGRATIONS_LOCK})`;
    await migrate(drizzle({ client }), { migrationsFolder: folder });
  } finally {
    await client.end({ timeout: 5 });
  }
}
