/**
 * Vitest global setup: one fresh, migrated PostgreSQL for the whole run, and
 * the provider stand-in. What is started is stopped when the run ends, and
 * also when the other half fails to start (nothing is left holding the run's
 * output open).
 */
import type { TestProject } from "vitest/node";
import { startPspProcess } from "../server/psp/process";
import { createFreshDatabase, freePort } from "./support/database";

/** Short enough for the slow-provider tests, long enough to race against. */
export const TEST_PSP_SLOW_MS = 1500;

export default async function setup(project: TestProject) {
  const [db, psp] = await Promise.allSettled([
    createFreshDatabase("vitest"),
    freePort().then((port) => startPspProcess({ port, slowMs: TEST_PSP_SLOW_MS, webhookSecret: "whsec_test_only" })),
  ]);
  if (db.status === "rejected" || psp.status === "rejected") {
    await Promise.all([db.status === "fulfilled" && db.value.dispose(), psp.status === "fulfilled" && psp.value.stop()]);
    throw db.status === "rejected" ? db.reason : (psp as PromiseRejectedResult).reason;
  }
  // Workers are started after this and inherit the environment.
  process.env.DATABASE_URL = db.value.url;
  process.env.PSP_URL = psp.value.url;
  process.env.PSP_WEBHOOK_SECRET = "whsec_test_only";
  project.provide("databaseUrl", db.value.url);
  project.provide("pspUrl", psp.value.url);
  return async () => {
    await Promise.all([psp.value.stop(), db.value.dispose()]);
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    pspUrl: string;
  }
}
