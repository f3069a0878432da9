/**
 * A run command of a spec's own, for settings the shared e2e server does not
 * have (the completer on, say): a fresh database, its own provider stand-in,
 * demo mode (the run command's demo secrets), in a process group of its own
 * so that one signal stops all of it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { expect } from "@playwright/test";
import postgres, { type Sql } from "postgres";
import { createFreshDatabase, freePort } from "../../tests/support/database";
import { keepServerLog } from "./server-log";
import { root } from "./walkthrough";

/**
 * `terminate`: SIGTERM to the run command's group and its exit awaited, the database kept for a look; `stop` also
 * drops it. `log`: the file its output is kept in (support/server-log.ts).
 */
export type OwnServer = { baseURL: string; db: Sql; log: string; terminate: () => Promise<number | null>; stop: () => Promise<void> };

export async function startOwnServer(label: string, env: Record<string, string>): Promise<OwnServer> {
  const [database, port, pspPort] = await Promise.all([createFreshDatabase(label), freePort(), freePort()]);
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    cwd: root,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, PORT: String(port), DATABASE_URL: database.url, PSP_PORT: String(pspPort), LOG_LEVEL: "warn", ...env },
  });
  // Its standard output (Next.js's banner) stays out of the test's output, as before; the log keeps it.
  const log = keepServerLog(child, `${label}-${port}`, { echoStdout: false });
  const db = postgres(database.url, { max: 2, onnotice: () => undefined });
  const baseURL = `http://127.0.0.1:${port}`;
  const terminate = async () => {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      // `close`: its output is all in its log by then.
      const exited = once(child, "close");
      process.kill(-child.pid, "SIGTERM");
      await exited;
    }
    return child.exitCode;
  };
  const stop = async () => {
    await terminate();
    await db.end();
    await database.dispose();
  };
  try {
    await expect
      .poll(async () => (await fetch(`${baseURL}/api/health`).catch(() => undefined))?.status, {
        timeout: 180_000,
        message: `${label}: the server never became healthy`,
      })
      .toBe(200);
  } catch (error) {
    await stop();
    throw error;
  }
  return { baseURL, db, log, terminate, stop };
}
