/**
 * The scaled-out topology on one machine, for `npm run cluster`, the soak
 * test and the cluster bench:
 *
 *   clients → HAProxy → N app instances (server/serve.ts on one build) → PgBouncer
 *   (transaction mode) → one PostgreSQL primary; one provider stand-in.
 *
 * The caller brings the primary (an embedded cluster, DATABASE_URL's server,
 * a fresh test database). `startCluster` migrates it once, directly (the
 * instances start with MIGRATE_ON_START=false and talk through the pooler
 * with DATABASE_POOLED=true), builds once if needed, then starts the rest and
 * waits until every instance is healthy and HAProxy sees them up. Everything
 * listens on 127.0.0.1. Each instance runs in a process group of its own, so
 * a Ctrl-C to the terminal reaches the orchestrator alone, which stops them
 * in order: HAProxy, the instances, the stand-in, PgBouncer.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { projectRoot, runsAsRoot, scratchClusterParent } from "../../db/cluster-home";
import { runMigrations } from "../../db/migrate";
import { startPgBouncer } from "../../db/pgbouncer";
import * as schema from "../../db/schema";
import { seedDemo } from "../../db/seed";
import { startPspProcess } from "../../server/psp/process";
import { ensureBuild, serverCommand } from "../build";
import { HAPROXY_SOURCE, startHaproxy } from "./haproxy";

export type ClusterOptions = {
  /** The PostgreSQL primary, reached directly: migrations run here, the pooler points here. */
  primaryUrl: string;
  /** One instance per port. */
  instancePorts: number[];
  /** HAProxy's port. */
  port: number;
  poolerPort: number;
  pspPort: number;
  /** What a taken `pspPort` means (startPspProcess's `ifTaken`); unset, an error. */
  pspIfTaken?: "refuse" | "pick-free";
  /** Where the stand-in keeps its records across restarts (startPspProcess's `dataFile`); unset, memory only. */
  pspDataFile?: string;
  /** Generated configurations and every process's log. */
  runDir: string;
  /** A standby of the primary for the admin's overview reads (DATABASE_REPLICA_URL), reached directly. */
  replicaUrl?: string;
  /** The environment of every instance (secrets, intervals, log level); the topology sets the rest. */
  instanceEnv: Record<string, string | undefined>;
  /** HAProxy's `timeout server`: an answer slower than this is re-sent to another instance. */
  serverTimeoutMs?: number;
  statsPort?: number;
  pspSlowMs?: number;
  pspWebhookSecret: string;
  seedDemo?: boolean;
  onLog?: (line: string) => void;
};

export type Instance = {
  name: string;
  port: number;
  url: string;
  logPath: string;
  /** Signals the instance's whole process group; SIGKILL is a crash mid-request. */
  kill: (signal: NodeJS.Signals) => void;
  /** Starts it again on its port (after it died) and resolves once it is healthy. */
  restart: () => Promise<void>;
  /** Resolves when the process has exited. */
  exited: () => Promise<void>;
};

export type Cluster = {
  url: string;
  poolerUrl: string;
  pspUrl: string;
  haproxyLog: string;
  instances: Instance[];
  /**
   * One more instance of the same build, outside the topology: the primary
   * directly (no PgBouncer), no HAProxy in front. The bench's baseline.
   */
  startDirectInstance: (
    port: number,
    env?: Record<string, string | undefined>,
  ) => Promise<{ url: string; pid: () => number | undefined; stop: () => Promise<void> }>;
  /** One command of HAProxy's runtime API, e.g. `set server instances/app2 state maint`. */
  haproxyCommand: (line: string) => Promise<string>;
  /** Pids of every process of the topology that runs now (for CPU accounting). */
  pids: () => { haproxy?: number; pooler: number; psp?: number; instances: (number | undefined)[] };
  stop: () => Promise<void>;
};

const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 15_000;
/** How often a restart tries again when its port is taken (EADDRINUSE), a second apart. */
const RESTART_ATTEMPTS = 5;

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const log = options.onLog ?? (() => undefined);
  mkdirSync(options.runDir, { recursive: true });
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse())
      await stop().catch((error: unknown) => log(`stopping: ${error instanceof Error ? error.message : String(error)}`));
  };
  try {
    await runMigrations(options.primaryUrl);
    log("migrations applied to the primary");
    if (options.seedDemo) await seedPrimary(options.primaryUrl);
    await ensureBuild(log);

    const psp = await startPspProcess({
      port: options.pspPort,
      ifTaken: options.pspIfTaken,
      slowMs: options.pspSlowMs ?? 3000,
      webhookSecret: options.pspWebhookSecret,
      dataFile: options.pspDataFile,
    });
    stops.push(psp.stop);
    // As root PgBouncer runs as the postgres user, which must reach its files: a directory of the project cache then, removed at the stop.
    const poolerDir = runsAsRoot() ? scratchClusterParent("pgbouncer") : path.join(options.runDir, "pgbouncer");
    if (runsAsRoot()) stops.push(async () => rmSync(poolerDir, { recursive: true, force: true }));
    const pooler = await startPgBouncer({
      upstreamUrl: options.primaryUrl,
      port: options.poolerPort,
      runDir: poolerDir,
      poolSize: 20,
    });
    stops.push(pooler.stop);
    log(`PgBouncer (transaction mode) on 127.0.0.1:${options.poolerPort}`);

    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...options.instanceEnv,
      NODE_ENV: "production",
      HOST: "127.0.0.1",
      DATABASE_URL: pooler.url,
      DATABASE_POOLED: "true",
      MIGRATE_ON_START: "false",
      SEED_DEMO: "false",
      ...(options.replicaUrl ? { DATABASE_REPLICA_URL: options.replicaUrl } : {}),
      PSP_URL: psp.url,
      PSP_WEBHOOK_SECRET: options.pspWebhookSecret,
      // HAProxy in front: the instances believe its X-Forwarded-For, and only from its own source address (scripts/cluster/haproxy.ts).
      TRUST_PROXY: HAPROXY_SOURCE,
    };
    // An instance's own embedded cluster or stand-in would be a second database or provider.
    for (const k of ["EMBEDDED_PG_DIR", "EMBEDDED_PG_PORT", "PSP_PORT"]) delete env[k];
    // A standby named in our own environment belongs to some other primary.
    if (!options.replicaUrl) delete env.DATABASE_REPLICA_URL;
    for (const [k, v] of Object.entries(options.instanceEnv)) if (v === undefined) delete env[k];

    const instances = options.instancePorts.map((port, i) =>
      instanceHandle(`app${i + 1}`, port, path.join(options.runDir, `app${i + 1}.log`), env),
    );
    stops.push(() => Promise.all(instances.map((i) => i.stop())).then(() => undefined));
    await Promise.all(instances.map((i) => i.start()));
    log(`${instances.length} instance(s) healthy on ports ${instances.map((i) => i.port).join(", ")}`);

    const haproxy = await startHaproxy({
      port: options.port,
      backends: instances.map((i) => ({ name: i.name, port: i.port })),
      runDir: options.runDir,
      serverTimeoutMs: options.serverTimeoutMs ?? 30_000,
      statsPort: options.statsPort,
    });
    stops.push(haproxy.stop);
    await waitForBackends(haproxy.url, instances.length);

    return {
      url: haproxy.url,
      poolerUrl: pooler.url,
      pspUrl: psp.url,
      haproxyLog: haproxy.logPath,
      instances: instances.map((i) => i.handle),
      haproxyCommand: haproxy.command,
      startDirectInstance: async (port, extra = {}) => {
        const directEnv: NodeJS.ProcessEnv = { ...env, DATABASE_URL: options.primaryUrl, DATABASE_POOLED: "false", ...extra };
        for (const [k, v] of Object.entries(extra)) if (v === undefined) delete directEnv[k];
        const direct = instanceHandle("direct", port, path.join(options.runDir, "direct.log"), directEnv);
        stops.push(direct.stop);
        await direct.start();
        return { url: direct.handle.url, pid: direct.pid, stop: direct.stop };
      },
      pids: () => ({ haproxy: haproxy.child.pid, pooler: pooler.pid, psp: psp.pid, instances: instances.map((i) => i.pid()) }),
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

async function seedPrimary(url: string): Promise<void> {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await seedDemo(drizzle({ client, schema }));
  } finally {
    await client.end({ timeout: 5 });
  }
}

function instanceHandle(name: string, port: number, logPath: string, env: NodeJS.ProcessEnv) {
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  const signal = (s: NodeJS.Signals) => {
    if (!running() || !child?.pid) return;
    try {
      process.kill(-child.pid, s);
    } catch {
      // The group is gone already.
    }
  };
  // A run that ends without stopping (an uncaught error) must not leave instances behind.
  const onExit = () => signal("SIGKILL");
  process.on("exit", onExit);

  const start = async () => {
    const out = openSync(logPath, "a");
    const [command, ...args] = serverCommand();
    child = spawn(command!, args, {
      cwd: projectRoot,
      env: { ...env, HOST: "127.0.0.1", PORT: String(port) },
      stdio: ["ignore", out, out],
      detached: true,
    });
    closeSync(out);
    const current = child;
    exited = new Promise((resolve) => current.once("exit", () => resolve()));
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (current.exitCode !== null || current.signalCode !== null)
        throw new Error(`instance ${name} (${url}) exited at start-up: ${lastLine(logPath)} (log: ${logPath})`);
      if (await healthy(url)) return;
      if (Date.now() > deadline)
        throw new Error(`instance ${name} (${url}) was not healthy within ${READY_TIMEOUT_MS / 1000} s (log: ${logPath})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const stop = async () => {
    process.removeListener("exit", onExit);
    if (!running()) return;
    signal("SIGTERM");
    const timer = setTimeout(() => signal("SIGKILL"), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  const handle: Instance = {
    name,
    port,
    url,
    logPath,
    kill: signal,
    restart: async () => {
      if (running()) throw new Error(`instance ${name} still runs: kill it first`);
      // The instance's port comes from the ephemeral range: while it was down, the kernel may have lent it to an
      // outgoing connection as its local port, for as long as that connection lives. Wait that out, a few times.
      for (let attempt = 1; ; attempt++) {
        try {
          return await start();
        } catch (error) {
          if (attempt === RESTART_ATTEMPTS || !String(error).includes("EADDRINUSE")) throw error;
          await new Promise((r) => setTimeout(r, 1_000));
        }
      }
    },
    exited: () => exited,
  };
  return { name, port, handle, start, stop, pid: () => (running() ? child?.pid : undefined) };
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2000) });
    return res.status === 200;
  } catch {
    return false;
  }
}

/** Round robin through HAProxy until every instance has answered a health check through it. */
async function waitForBackends(url: string, count: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  let ok = 0;
  while (ok < count * 2) {
    ok = (await healthy(url)) ? ok + 1 : 0;
    if (Date.now() > deadline) throw new Error(`HAProxy at ${url} did not route to the instances within 30 s`);
    if (ok === 0) await new Promise((r) => setTimeout(r, 200));
  }
}

function lastLine(file: string): string {
  try {
    const lines = readFileSync(file, "utf8").trim().split("\n");
    return lines.findLast((l) => l.startsWith("Cannot start:")) ?? lines.at(-1) ?? "nothing logged";
  } catch {
    return "nothing logged";
  }
}
