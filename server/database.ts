/**
 * The data layer's settings, from the validated environment: db/ takes them
 * as parameters and reads nothing of the server's. Every process that opens
 * the app's pool (the server, the CLIs, the tests) opens it with these, so
 * every transaction runs under the middleware's limits.
 */
import type { DatabaseSettings } from "../db/bootstrap";
import { openDatabase, type OpenOptions } from "../db/client";
import { TRANSACTION_LIMITS } from "../db/limits";
import { env } from "./env";
import { connectionLimits, setLocalLimits } from "@exactly-once/trpc";
import { logger } from "./logger";

/**
 * A direct connection carries the limits from its start, so no transaction
 * (the middleware's nor the app's own) sets them again; behind a
 * transaction-mode pooler, which refuses such start-up parameters, every
 * transaction sets them first (db/limits.ts).
 */
export function poolOptions(options: OpenOptions = {}): OpenOptions {
  const pooled = options.pooled ?? env.DATABASE_POOLED;
  const limits = pooled ? { beginWith: setLocalLimits(TRANSACTION_LIMITS) } : { connection: connectionLimits(TRANSACTION_LIMITS) };
  return { ...limits, ...options, pooled };
}

export const databaseSettings = (): DatabaseSettings => ({
  url: env.DATABASE_URL,
  embedded: { dir: env.EMBEDDED_PG_DIR, port: env.EMBEDDED_PG_PORT },
  migrate: env.MIGRATE_ON_START,
  seed: env.SEED_DEMO,
  pool: poolOptions(),
  log: logger,
});

/** The app's pool on `url` (tests and child processes that are given a database). */
export const openAppDatabase = (url: string, options: OpenOptions = {}) => openDatabase(url, poolOptions(options));
