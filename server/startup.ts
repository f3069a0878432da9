/**
 * The server's start-up (loaded by instrumentation.node.ts): database (embedded or DATABASE_URL), migrations, demo
 * seed, the payment provider stand-in (its own process), the expired-key
 * sweep, the completer, and a clean stop on SIGTERM/SIGINT (the app's own
 * server, server/serve.ts, leaves the signals to us: Next.js installs none).
 *
 * `start` returns at once and the rest runs behind it, so the server answers
 * while it waits: health says "starting: waiting for the database" and every
 * other request gets a 503 with Retry-After (proxy.ts), until PostgreSQL
 * answers and the migrations are done. The wait lasts DATABASE_WAIT_MS, with
 * backoff; after it, or on any failure that waiting cannot cure, the process
 * exits non-zero with one line. Once serving, a monitor keeps the gate honest
 * through an outage, and restarts the embedded cluster if it dies.
 */
import { isDatabaseUnavailable, markDatabase, markReady, markStarting } from "../db/availability";
import { ensureDatabase, startEmbedded, type Booted } from "../db/bootstrap";
import { closeDatabase } from "../db/client";
import { clusterDir } from "../db/cluster-home";
import { forgetEmbeddedPostgres } from "../db/embedded";
import { startDatabaseMonitor } from "../db/monitor";
import { writeRunFile } from "../db/run-file";
import { databaseSettings } from "./database";
import { app } from "./app";
import { DEFAULT_PSP_PORT, env } from "./env";
import { logger } from "./logger";
import { useStandIn } from "./payments/provider";
import { recordsBesideEmbedded, startPspProcess, type PspProcess } from "./psp/process";
import { webhookReceivers } from "./webhooks/receivers";

const WAITING = "waiting for the database";

/** What has been started so far, stopped in reverse on a signal or a failed start. */
const started: {
  booted?: Booted;
  psp?: PspProcess;
  stops: (() => void | Promise<void>)[];
} = { stops: [] };

/** Returns at once; `cannotStart` ends the process with one line if start-up fails. */
export function startServer(cannotStart: (error: unknown) => void): void {
  markStarting(WAITING);
  let stopping = false;
  /** Stops what has started; exits with `code`, or returns for the caller to exit. */
  const stop = async (signal: NodeJS.Signals | "failure", code: number | undefined) => {
    if (stopping) return;
    stopping = true;
    if (signal !== "failure") logger.info({ signal }, "shutting down");
    // The monitor first finishes a revive in flight, so the cluster stopped below is the current one.
    await Promise.all(started.stops.reverse().map((s) => s()));
    // Signal PostgreSQL first: an owned cluster stops while we close the pool.
    const stopped = started.booted?.embedded?.stop();
    const pspStopped = started.psp?.stop();
    await closeDatabase().catch(() => undefined);
    await pspStopped;
    await stopped?.catch((err: unknown) => logger.error({ err }, "stopping PostgreSQL failed"));
    if (code !== undefined) process.exit(code);
  };
  // `on`, not `once`: Ctrl-C reaches the whole process group and the run command forwards it too, so a
  // second signal comes while the first stop runs; without a listener it would kill us mid-stop and
  // leave the embedded cluster running. `stop` itself runs once.
  process.on("SIGTERM", (signal) => void stop(signal, 0));
  process.on("SIGINT", (signal) => void stop(signal, 0));
  void boot().catch(async (error: unknown) => {
    await stop("failure", undefined);
    cannotStart(error);
  });
}

async function boot(): Promise<void> {
  // The contract: the run command also serves the provider stand-in, unless PSP_URL names one.
  const psp = env.PSP_URL
    ? undefined
    : startPspProcess({
        port: env.PSP_PORT ?? DEFAULT_PSP_PORT,
        ifTaken: env.PSP_PORT === undefined ? "pick-free" : "refuse",
        slowMs: env.PSP_SLOW_MS,
        webhookSecret: env.PSP_WEBHOOK_SECRET,
        dataFile: standInRecords(),
        webhookUrls: Object.values(webhookReceivers(`http://127.0.0.1:${env.PORT}`)),
      }).then((p) => {
        started.psp = p;
        useStandIn(p.url);
        if (p.port !== (env.PSP_PORT ?? DEFAULT_PSP_PORT))
          logger.warn({ pspUrl: p.url }, `port ${DEFAULT_PSP_PORT} is taken: the provider stand-in listens on ${p.url}`);
      });
  // Together: a stand-in that cannot start fails the start at once, not after the database wait.
  const [booted] = await Promise.all([waitForDatabase().then((b) => (started.booted = b)), psp]);
  // A clean stop writes what the event writer holds (5 seconds of replay counts at most) before the pool closes.
  started.stops.push(() => app.eventLog.flush());
  started.stops.push(app.startExpirySweep(env.IDEMPOTENCY_SWEEP_MS).stop);
  started.stops.push(app.completer.start(env.COMPLETER_INTERVAL_MS).stop);
  started.stops.push(
    startDatabaseMonitor({
      url: booted.url,
      pooled: env.DATABASE_POOLED,
      onChange: (up) => {
        markDatabase(up);
        logger.warn({ database: up ? "up" : "down" }, up ? "the database is back" : "the database is unavailable: answering 503");
      },
      // The run command keeps its own cluster running: a dead one is started again, on its port.
      revive: booted.embedded && (() => reviveEmbedded(booted)),
    }).stop,
  );
  started.stops.push(
    writeRunFile({
      url: `http://${env.HOST}:${env.PORT}`,
      databaseUrl: booted.url,
      pspUrl: started.psp?.url ?? env.PSP_URL!,
      embeddedDir: booted.embedded?.dir,
    }),
  );
  markReady();
  logger.info("serving");
}

/**
 * Where the stand-in keeps its charges across restarts: beside the embedded
 * cluster's data directory (a test's scratch cluster takes them along). With DATABASE_URL the
 * app cannot tell which records belong to that database: memory only,
 * unless PSP_DATA_FILE names a file (the stand-in reads it from the
 * environment it inherits).
 */
function standInRecords(): string | undefined {
  if (env.DATABASE_URL) return undefined;
  return recordsBesideEmbedded(clusterDir(env.EMBEDDED_PG_DIR), env.PSP_PORT ?? DEFAULT_PSP_PORT);
}

/** ensureDatabase, again and again with backoff while the database cannot be reached, for DATABASE_WAIT_MS. */
async function waitForDatabase(): Promise<Booted> {
  const deadline = Date.now() + env.DATABASE_WAIT_MS;
  // Backoff capped at 2 s: once the database answers, the instance serves within about that.
  for (let delay = 250; ; delay = Math.min(delay * 2, 2000)) {
    try {
      return await ensureDatabase(databaseSettings(env), { adopt: true });
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      if (Date.now() + delay > deadline)
        throw new Error(`the database did not answer within DATABASE_WAIT_MS=${env.DATABASE_WAIT_MS} ms (${reason})`);
      logger.warn({ reason, retryInMs: delay }, WAITING);
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

async function reviveEmbedded(booted: Booted): Promise<void> {
  const dead = booted.embedded!;
  if (dead.alive()) return;
  logger.warn({ dir: dead.dir }, "embedded PostgreSQL is gone: starting it again");
  forgetEmbeddedPostgres(dead.dir);
  booted.embedded = await startEmbedded(databaseSettings(env), true, dead.port);
}
