/**
 * Vitest global setup: one fresh, migrated PostgreSQL for the whole run, and
 * the provider stand-in. What is started is stopped when the run ends, and
 * also when the other half fails to start (nothing is left holding the run's
 * output open).
 *
 * With DATABASE_POOLED=true (and DATABASE_URL naming PostgreSQL itself) the
 * fresh database is created and migrated directly, and the tests then reach
 * it through a PgBouncer in transaction mode started for the run: the whole
 * suite as a deployment behind a pooler runs it.
 */
import { rmSync } from "node:fs";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { scratchClusterParent } from "../db/cluster-home";
import { startPgBouncer } from "../db/pgbouncer";
import { startPspProcess } from "../server/psp/process";
import { createFreshDatabase, freePort, type FreshDatabase } from "./support/database";

/** The run's database behind a PgBouncer of its own; disposing stops the pooler first. */
async function behindPgBouncer(db: FreshDatabase): Promise<FreshDatabase> {
  const scratch = scratchClusterParent("pgbouncer");
  try {
    const bouncer = await startPgBouncer({ upstreamUrl: db.url, port: await freePort(), runDir: path.join(scratch, "run") });
    return {
      url: bouncer.url,
      dispose: async () => {
        await bouncer.stop();
        rmSync(scratch, { recursive: true, force: true });
        await db.dispose();
      },
    };
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    await db.dispose();
    throw error;
  }
}

/** Short enough for the slow-provider tests, long enough to race against. */
export const TEST_PSP_SLOW_MS = 1500;

export default async function setup(project: TestProject) {
  const pooled = process.env.DATABASE_POOLED === "true";
  const [db, psp] = await Promise.allSettled([
    createFreshDatabase("vitest").then(async (direct) => ({ direct: direct.url, db: pooled ? await behindPgBouncer(direct) : direct })),
    freePort().then((port) => startPspProcess({ port, slowMs: TEST_PSP_SLOW_MS, webhookSecret: "whsec_test_only" })),
  ]);
  if (db.status === "rejected" || psp.status === "rejected") {
    await Promise.all([db.status === "fulfilled" && db.value.db.dispose(), psp.status === "fulfilled" && psp.value.stop()]);
    throw db.status === "rejected" ? db.reason : (psp as PromiseRejectedResult).reason;
  }
  // Workers are started after this and inherit the environment: each worker's process app is built from it, as a
  // server's is from its own (a test that needs other settings builds an app of its own: tests/support/app.ts).
  Object.assign(process.env, { DATABASE_URL: db.value.db.url, PSP_URL: psp.value.url, PSP_WEBHOOK_SECRET: "whsec_test_only" });
  // Every file's in-process storefront checkouts come from one address ("unknown"), counted in one database by files
  // running side by side: the per-address budget is tested where a file sets it (tenant-limits.test.ts).
  process.env.STOREFRONT_REQUESTS_PER_MINUTE ??= "0";
  // Likewise every file's failure-lab runs: the per-minute limit is tested where a file sets it (tests/lab/scoping.test.ts).
  process.env.LAB_RUNS_PER_MINUTE ??= "1000000";
  project.provide("databaseUrl", db.value.db.url);
  project.provide("directDatabaseUrl", db.value.direct);
  project.provide("pspUrl", psp.value.url);
  return async () => {
    await Promise.all([psp.value.stop(), db.value.db.dispose()]);
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    /** Where the tests' pools connect: PostgreSQL, or with DATABASE_POOLED=true the run's PgBouncer. */
    databaseUrl: string;
    /** PostgreSQL itself, for what needs one server session (migrations, a pooler of a test's own). */
    directDatabaseUrl: string;
    pspUrl: string;
  }
}
