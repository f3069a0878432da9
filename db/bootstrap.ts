/**
 * Start-up of the data layer, shared by the server, the CLIs and the tests:
 * pick the database (DATABASE_URL, or an embedded PostgreSQL), apply the
 * migrations (or, with MIGRATE_ON_START=false, check that none is pending),
 * optionally seed the demo, and open the one pool. Everything here is safe
 * for several instances starting at once: the migrations take their lock,
 * the seed is upserts.
 */
import { openDatabase, type Database, type OpenOptions } from "./client";
import { clusterDir } from "./cluster-home";
import { startEmbeddedPostgres, type RunningPostgres } from "./embedded";
import { runMigrations, SCHEMA_BEHIND, schemaBehind } from "./migrate";
import { seedDemo } from "./seed";

export type Booted = Database & { embedded?: RunningPostgres };

/**
 * What the data layer is told by whoever starts it (the server's settings
 * come from its validated environment): it reads no environment of its own.
 */
export type DatabaseSettings = {
  /** PostgreSQL to use; unset, an embedded cluster is started. */
  url: string | undefined;
  embedded: { dir: string | undefined; port: number | undefined };
  /** Apply pending migrations at start-up unless a BootOptions says otherwise. */
  migrate: boolean;
  /** Seed the demo tenant and catalog unless a BootOptions says otherwise. */
  seed: boolean;
  pool: OpenOptions;
  log: { info: (fields: object, message: string) => void; debug: (fields: object, message: string) => void };
};

export type BootOptions = {
  seed?: boolean;
  /** The run command takes over a cluster a killed run left; CLIs only borrow it. */
  adopt?: boolean;
  /** Apply pending migrations (the settings' `migrate` unless given); otherwise refuse a schema that is behind. */
  migrate?: boolean;
};

/** Start-up cannot go on with this database as it is; the message is one line that says what to do. */
export class DatabaseSetupError extends Error {
  override readonly name = "DatabaseSetupError";
}

/** `port`: the one a cluster that died had, so the open pool's URL still reaches its successor. */
export function startEmbedded(settings: DatabaseSettings, adopt: boolean, port = settings.embedded.port): Promise<RunningPostgres> {
  return startEmbeddedPostgres({
    dir: clusterDir(settings.embedded.dir),
    port,
    adopt,
    onLog: (line) => settings.log.debug({ postgres: line.trim() }, "embedded postgres"),
  });
}

export async function ensureDatabase(settings: DatabaseSettings, options: BootOptions = {}): Promise<Booted> {
  let embedded: RunningPostgres | undefined;
  let url = settings.url;
  if (!url) {
    embedded = await startEmbedded(settings, options.adopt ?? false);
    url = embedded.url;
    settings.log.info({ dir: embedded.dir, port: embedded.port }, "embedded PostgreSQL running");
  }
  const migrate = options.migrate ?? settings.migrate;
  if (migrate && settings.pool.pooled) {
    throw new DatabaseSetupError(
      "Migrations hold a session lock, which a transaction pooler cannot keep: run npm run db:migrate with DATABASE_URL set to PostgreSQL itself and DATABASE_POOLED unset.",
    );
  }
  if (migrate) await runMigrations(url);
  const database = openDatabase(url, settings.pool);
  if (!migrate && (await schemaBehind(database.sql))) throw new DatabaseSetupError(SCHEMA_BEHIND);
  if (options.seed ?? settings.seed) await seedDemo(database.db);
  return { ...database, embedded };
}
