/**
 * The data layer's settings, from the app's: db/ takes them as parameters
 * and reads nothing of the server's. Every process that opens the app's
 * pool (the server, the CLIs, the tests) opens it with these, so every
 * transaction runs under the middleware's limits.
 */
import type { DatabaseSettings } from "../db/bootstrap";
import { openDatabase, type OpenOptions } from "../db/client";
import { TRANSACTION_LIMITS } from "../db/limits";
import type { Env } from "./env-schema";
import { connectionLimits, setLocalLimits } from "@exactly-once/trpc";
import { logger } from "./logger";

/**
 * A direct connection carries the limits from its start, so no transaction
 * (the middleware's nor the app's own) sets them again; behind a
 * transaction-mode pooler, which refuses such start-up parameters, every
 * transaction sets them first (db/limits.ts).
 */
function poolOptions(options: OpenOptions & { pooled: boolean }): OpenOptions {
  const limits = options.pooled ? { beginWith: setLocalLimits(TRANSACTION_LIMITS) } : { connection: connectionLimits(TRANSACTION_LIMITS) };
  return { ...limits, ...options };
}

export const databaseSettings = (settings: Env): DatabaseSettings => ({
  url: settings.DATABASE_URL,
  embedded: { dir: settings.EMBEDDED_PG_DIR, port: settings.EMBEDDED_PG_PORT },
  migrate: settings.MIGRATE_ON_START,
  seed: settings.SEED_DEMO,
  pool: poolOptions({ pooled: settings.DATABASE_POOLED }),
  log: logger,
});

/** The app's pool on `url` (tests, child processes and benches that are given a database); `pooled`: behind PgBouncer. */
export const openAppDatabase = (url: string, options: OpenOptions & { pooled: boolean }) => openDatabase(url, poolOptions(options));
