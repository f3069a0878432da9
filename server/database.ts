/**
 * The data layer's settings, from the validated environment: db/ takes them
 * as parameters and reads nothing of the server's. Every process that opens
 * the app's pool (the server, the CLIs, the tests) opens it with these, so
 * each transaction sets the middleware's limits first.
 */
import type { DatabaseSettings } from "../db/bootstrap";
import { openDatabase, type OpenOptions } from "../db/client";
import { TRANSACTION_LIMITS } from "../db/limits";
import { env } from "./env";
import { setLocalLimits } from "@exactly-once/trpc";
import { logger } from "./logger";

export const poolOptions = (options: OpenOptions = {}): OpenOptions => ({
  pooled: env.DATABASE_POOLED,
  beginWith: setLocalLimits(TRANSACTION_LIMITS),
  ...options,
});

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
