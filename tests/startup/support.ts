/**
 * Real servers for the start-up tests: the production build run as
 * The production server (server/serve.ts; or the whole run command) in a child process, on a free port,
 * against a PostgreSQL the test owns and can stop and start again.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { afterAll, inject } from "vitest";
import { projectRoot, scratchClusterParent } from "../../db/cluster-home";
import { freePort, startEmbeddedPostgres, type RunningPostgres } from "../../db/embedded";
import { processAlive } from "../../db/file-lock";
import { ensureBuild, serverCommand } from "../../scripts/build";
import * as schema from "../../db/schema";
import { createTenant } from "../../server/tenants/service";

export { ensureBuild };

/** A cluster of the test's own in a scratch directory, on a fixed port so a restart keeps its URL. */
export async function throwawayCluster(label: string) {
  const parent = scratchClusterParent(label);
  const dir = path.join(parent, "pg");
  const port = await freePort();
  let pg: RunningPostgres = await startEmbeddedPostgres({ dir, port });
  return {
    dir,
    url: pg.url,
    stop: () => pg.stop(),
    start: async () => {
      pg = await startEmbeddedPostgres({ dir, port });
    },
    dispose: async () => {
      await pg.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

export type Server = {
  url: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number>;
  stop: () => Promise<number>;
};

/** Environment every server under test gets: production, quiet, the run's provider stand-in. */
function serverEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: "production",
    ADMIN_PASSWORD: "a test admin password",
    LOG_LEVEL: "warn",
    PSP_URL: inject("pspUrl"),
    PSP_WEBHOOK_SECRET: "whsec_test_only",
    SEED_DEMO: "false",
    ...extra,
  };
  for (const [k, v] of Object.entries(extra)) if (v === undefined) delete env[k];
  return env;
}

/**
 * Spawns a server process; `command` is the production server (server/serve.ts) unless given (the run command, say).
 * `group`: in a process group of its own, as a terminal runs a command, so a test can signal the group as Ctrl-C does.
 */
/**
 * Every server a test file spawned and did not stop. A test that times out
 * is abandoned, not unwound: its `finally` may run after the worker is gone,
 * and a run command left running keeps its embedded PostgreSQL. So the file
 * stops what is still running when it ends (SIGTERM: the run command stops
 * its cluster and stand-in itself).
 */
const spawned = new Set<Server>();
afterAll(async () => {
  await Promise.all([...spawned].map((server) => server.stop()));
});

export async function spawnServer(
  extra: Record<string, string | undefined>,
  command?: string[],
  options: { group?: boolean } = {},
): Promise<Server> {
  const port = Number(extra.PORT ?? (await freePort()));
  const args = command ?? serverCommand();
  // A run through a pooler (DATABASE_POOLED=true) is the tests' own; a server on a cluster of its own starts as by default unless told.
  const env = serverEnv({ DATABASE_POOLED: undefined, MIGRATE_ON_START: undefined, PORT: String(port), ...extra });
  const child = spawn(args[0]!, args.slice(1), {
    cwd: projectRoot,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.group === true,
  });
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number>((resolve) => child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  const server: Server = {
    url: `http://127.0.0.1:${port}`,
    child,
    output: () => output,
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
  spawned.add(server);
  void exited.then(() => spawned.delete(server));
  return server;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value; fails after `ms` with what the last attempt saw. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? ` (last: ${String(last)})` : ""}`);
    await sleep(50);
  }
}

export async function health(server: Server): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/api/health`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A tenant written straight into `url`'s database (the server under test has its own). */
export async function tenantOn(url: string, name: string) {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const { tenant, token } = await createTenant(drizzle({ client, schema }), name);
    return { id: tenant.id, token };
  } finally {
    await client.end();
  }
}

/**
 * Running, not a zombie: the container's init may be slow to reap what a
 * server left it. (Not by its cmdline: PostgreSQL rewrites that, and a read
 * racing the rewrite finds it empty.)
 */
export const running = (pid: number): boolean => processAlive(pid);

/** The pid in a data directory's postmaster.pid, 0 without one. */
export const postmasterOf = (dir: string) =>
  existsSync(path.join(dir, "postmaster.pid")) ? Number(readFileSync(path.join(dir, "postmaster.pid"), "utf8").split("\n")[0]) : 0;
