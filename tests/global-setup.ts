/** Vitest global setup: one fresh, migrated PostgreSQL for the whole run. */
import type { TestProject } from "vitest/node";
import { startPspProcess } from "../server/psp/process";
import { createFreshDatabase, freePort } from "./support/database";

/** Short enough for the slow-provider tests, long enough to race against. */
export const TEST_PSP_SLOW_MS = 1500;

export default async function setup(project: TestProject) {
  const [db, psp] = await Promise.all([
    createFreshDatabase("vitest"),
    freePort().then((port) => startPspProcess({ port, slowMs: TEST_PSP_SLOW_MS, webhookSecret: "whsec_test_only" })),
  ]);
  // Workers are started after this and inherit the environment.
  process.env.DATABASE_URL = db.url;
  process.env.PSP_URL = psp.url;
  process.env.PSP_WEBHOOK_SECRET = "whsec_test_only";
  project.provide("databaseUrl", db.url);
  project.provide("pspUrl", psp.url);
  return async () => {
    await psp.stop();
    await db.dispose();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    pspUrl: string;
  }
}
