/**
 * Start-up of the data layer, shared by the server, the CLIs and the tests:
 * pick the database (DATABASE_URL, or an embedded PostgreSQL), apply the
 * migrations, optionally seed the demo, and open the one pool.
 */
import { env } from "../server/env";
import { logger } from "../server/logger";
import { openDatabase, type Database } from "./client";
import { startEmbeddedPostgres, type RunningPostgres } from "./embedded";
import { runMigrations } from "./migrate";
import { seedDemo } from "./seed";

export type Booted = Database & { embedded?: RunningPostgres };

export async function ensureDatabase(options: { seed?: boolean } = {}): Promise<Booted> {
  let embedded: RunningPostgres | undefined;
  let url = env.DATABASE_URL;
  if (!url) {
    embedded = await startEmbeddedPostgres({
      dir: env.EMBEDDED_PG_DIR,
      port: env.EMBEDDED_PG_PORT,
      onLog: (line) => logger.debug({ postgres: line.trim() }, "embedded postgres"),
    });
    url = embedded.url;
    logger.info({ dir: env.EMBEDDED_PG_DIR, port: env.EMBEDDED_PG_PORT }, "embedded PostgreSQL running");
  }
  await runMigrations(url);
  const database = openDatabase(url);
  if (options.seed ?? env.SEED_DEMO) await seedDemo(database.db);
  return { ...database, embedded };
}
