/**
 * Start-up of the data layer, shared by the server, the CLIs and the tests:
 * pick the database (DATABASE_URL, or an embedded PostgreSQL), apply the
 * migrations, optionally seed the demo, and open the one pool.
 */
import { env } from "../server/env";
import { logger } from "../server/logger";
import { openDatabase, type Database } from "./client";
import { clusterDir } from "./cluster-home";
import { startEmbeddedPostgres, type RunningPostgres } from "./embedded";
import { runMigrations } from "./migrate";
import { seedDemo } from "./seed";

export type Booted = Database & { embedded?: RunningPostgres };

export type BootOptions = {
  seed?: boolean;
  /** The run command takes over a cluster a killed run left; CLIs only borrow it. */
  adopt?: boolean;
};

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
  await runMigrations(url);
  const database = openDatabase(url);
  if (options.seed ?? env.SEED_DEMO) await seedDemo(database.db);
  return { ...database, embedded };
}
