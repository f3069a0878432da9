/**
 * Start-up of the data layer, shared by the server, the CLIs and the tests:
 * pick the database (DATABASE_URL, or an embedded PostgreSQL), apply the
 * migrations (or, with MIGRATE_ON_START=false, check that none is pending),
 * optionally seed the demo, and open the one pool. Everything here is safe
 * for several instances starting at once: the migrations take their lock,
 * the seed is upserts.
 */
import { env } from "../server/env";
import { logger } from "../server/logger";
import { openDatabase, type Database } from "./client";
import { clusterDir } from "./cluster-home";
import { startEmbeddedPostgres, type RunningPostgres } from "./embedded";
import { runMigrations, SCHEMA_BEHIND, schemaBehind } from "./migrate";
import { seedDemo } from "./seed";

export type Booted = Database & { embedded?: RunningPostgres };

export type BootOptions = {
  seed?: boolean;
  /** The run command takes over a cluster a killed run left; CLIs only borrow it. */
  adopt?: boolean;
  /** Apply pending migrations (MIGRATE_ON_START unless given); otherwise refuse a schema that is behind. */
  migrate?: boolean;
};

/** Start-up cannot go on with this database as it is; the message is one line that says what to do. */
export class DatabaseSetupError extends Error {
  override readonly name = "DatabaseSetupError";
}

/** `port`: the one a cluster that died had, so the open pool's URL still reaches its successor. */
export function startEmbedded(adopt: boolean, port = env.EMBEDDED_PG_PORT): Promise<RunningPostgres> {
  return startEmbeddedPostgres({
    dir: clusterDir(env.EMBEDDED_PG_DIR),
    port,
    adopt,
    onLog: (line) => logger.debug({ postgres: line.trim() }, "embedded postgres"),
  });
}

export async function ensureDatabase(options: BootOptions = {}): Promise<Booted> {
  let embedded: RunningPostgres | undefined;
  let url = env.DATABASE_URL;
  if (!url) {
    embedded = await startEmbedded(options.adopt ?? false);
    url = embedded.url;
    logger.info({ dir: embedded.dir, port: embedded.port }, "embedded PostgreSQL running");
  }
  const migrate = options.migrate ?? env.MIGRATE_ON_START;
  if (migrate && env.DATABASE_POOLED) {
    throw new DatabaseSetupError(
      "Migrations hold a session lock, which a transaction pooler cannot keep: run npm run db:migrate with DATABASE_URL set to PostgreSQL itself and DATABASE_POOLED unset.",
    );
  }
  if (migrate) await runMigrations(url);
  const database = openDatabase(url);
  if (!migrate && (await schemaBehind(database.sql))) throw new DatabaseSetupError(SCHEMA_BEHIND);
  if (options.seed ?? env.SEED_DEMO) await seedDemo(database.db);
  return { ...database, embedded };
}
