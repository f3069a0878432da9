/**
 * The app under test and its database, in a process group of their own (see
 * `e2e/serve.ts` for why): a fresh PostgreSQL from `createFreshDatabase`, the
 * run command on E2E_PORT against it, and a stop in order (the app first, the
 * database after it) when the supervisor disconnects, dies or signals.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { constants } from "node:os";
import path from "node:path";
import { createFreshDatabase, freePort } from "../../tests/support/database";
import { clearServerLogs, keepServerLog, SHARED_SERVER_LOG } from "./server-log";
import { DATABASE_URL_FILE, E2E_PORT, PSP_URL_FILE, STATE_DIR } from "./settings";

const root = path.resolve(import.meta.dirname, "..", "..");

let app: ChildProcess | undefined;
let stopping = false;

function stop(): void {
  if (stopping) return;
  stopping = true;
  // The whole group: the run command, the Next.js server, or a build still running.
  if (app?.pid !== undefined && app.exitCode === null && app.signalCode === null) process.kill(-app.pid, "SIGTERM");
}

// A signal's default action would end this process at once, under a still
// running app and before the database is stopped or dropped. This process
// orders the stop itself.
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, stop);
process.on("disconnect", stop);
// Forked by serve.ts only: a channel already closed while this module loaded
// means the supervisor let go before the listener above existed.
if (!process.connected) stop();

/** `close`, not `exit`: its output is all read (and in its log) by then. */
function exited(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once("close", (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)));
  });
}

async function main(): Promise<number> {
  clearServerLogs();
  const database = await createFreshDatabase("e2e");
  try {
    if (stopping) return 0;
    mkdirSync(STATE_DIR, { recursive: true });
    writeFileSync(DATABASE_URL_FILE, database.url);
    const pspPort = await freePort();
    writeFileSync(PSP_URL_FILE, `http://127.0.0.1:${pspPort}`);
    app = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      cwd: root,
      // Its own group, so one signal reaches a `next build` as well as the server.
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      // A provider stand-in of its own: never one a developer's server (or another run) left on 4010.
      // No completer here: these specs retry stale keys themselves; completer.spec.ts runs a server with one.
      // No expiry sweep either: specs plant expired keys for the dashboard to show and purge, and a sweep
      // coming round in between deleted them (seen: "Expired only" found 0 rows).
      env: {
        ...process.env,
        PORT: String(E2E_PORT),
        DATABASE_URL: database.url,
        PSP_PORT: String(pspPort),
        COMPLETER_INTERVAL_MS: "0",
        IDEMPOTENCY_SWEEP_MS: "0",
        // Every spec's browser checks out from one address (loopback), more often than a visitor would.
        STOREFRONT_REQUESTS_PER_MINUTE: process.env.STOREFRONT_REQUESTS_PER_MINUTE ?? "0",
        // The lab specs start runs from every worker at once, more than a visitor's 30 a minute (tests/lab holds that limit).
        LAB_RUNS_PER_MINUTE: process.env.LAB_RUNS_PER_MINUTE ?? "1000",
        LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
      },
    });
    keepServerLog(app, SHARED_SERVER_LOG);
    const code = await exited(app);
    return stopping ? 0 : code;
  } finally {
    rmSync(DATABASE_URL_FILE, { force: true });
    rmSync(PSP_URL_FILE, { force: true });
    await database.dispose();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`e2e server failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
