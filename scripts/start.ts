/**
 * npm start — the run command. Builds when there is no build of the current
 * sources (waiting for a build another start is running), then serves the
 * production server on HOST:PORT (default 127.0.0.1:3000). The server itself
 * starts embedded PostgreSQL (or uses DATABASE_URL), migrates and seeds
 * (instrumentation.node.ts). SIGTERM/SIGINT stop everything.
 *
 * Without ADMIN_PASSWORD the admin dashboard gets the documented demo
 * password (DEMO_ADMIN_PASSWORD); with it, or with the demo webhook secret, the server
 * refuses to listen beyond loopback. Any failure to start is one line on
 * standard error and a non-zero exit.
 */
import { spawn } from "node:child_process";
import { isIP } from "node:net";
import { constants } from "node:os";
// The schema module only: server/env parses the environment on import, before the demo password is set below.
import { DEFAULT_PSP_PORT, DEMO_ADMIN_PASSWORD, DEMO_WEBHOOK_SECRET } from "../server/env-schema";
import { answerHelp } from "./help";

answerHelp(`Usage: npm start

Builds the app when there is no build of the current sources, then serves it
with embedded PostgreSQL, or the database at DATABASE_URL, and a payment
provider stand-in of its own. Ctrl-C stops everything it started.

What each port is and the variable that moves it:
  PORT=3000              the app, on HOST (default 127.0.0.1)
  PSP_PORT=4010          the provider stand-in; unset and 4010 taken: a free port,
                         named in the ready line; set and taken: start-up refuses
  EMBEDDED_PG_PORT=54329 the embedded PostgreSQL (54329 when free, else a free
                         port; a running cluster keeps its own)
  DATABASE_URL           your PostgreSQL instead of the embedded one
  EMBEDDED_PG_DIR        the embedded cluster's data directory (default .data/pg)

A second server on this machine needs another PORT and another database
(EMBEDDED_PG_DIR or DATABASE_URL); it gets a stand-in of its own.
Every setting: docs/RUNNING.md, "Configuration".`);

function fail(message: string): never {
  process.stderr.write(`Cannot start: ${message}\n`);
  process.exit(1);
}

/** 127.0.0.0/8, ::1 and "localhost": reachable from this machine only. */
function loopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

async function main(): Promise<void> {
  if (!process.env.ADMIN_PASSWORD) {
    process.env.ADMIN_PASSWORD = DEMO_ADMIN_PASSWORD;
    // Demo secrets mean a demo: the failure lab's simulations are on (server/env.ts, DEMO_MODE).
    process.env.DEMO_MODE ??= "true";
    process.stderr.write(`ADMIN_PASSWORD is unset: /admin accepts the demo password "${DEMO_ADMIN_PASSWORD}".\n`);
  }
  // Checked here, before a build, so a bad setting costs a second, not a minute.
  const { env } = await import("../server/env");
  if (!loopback(env.HOST)) {
    const demo = [
      env.ADMIN_PASSWORD === DEMO_ADMIN_PASSWORD && "the demo ADMIN_PASSWORD",
      env.PSP_WEBHOOK_SECRET === DEMO_WEBHOOK_SECRET && "the demo PSP_WEBHOOK_SECRET",
    ].filter(Boolean);
    if (demo.length > 0)
      fail(
        `HOST=${env.HOST} listens beyond this machine while ${demo.join(" and ")} is in use: set your own, or leave HOST unset (127.0.0.1).`,
      );
  }
  const { ensureBuild, serverCommand } = await import("./build");
  const { projectRoot } = await import("../db/cluster-home");
  const { runFileOf } = await import("../db/run-file");
  await ensureBuild((line) => process.stderr.write(`${line}\n`));

  const [command, ...args] = serverCommand();
  const server = spawn(command!, args, {
    cwd: projectRoot,
    stdio: "inherit",
    env: { ...process.env, NODE_ENV: "production", HOST: env.HOST, PORT: String(env.PORT) },
  });
  // One stop, however many signals: the first is passed on (a SIGTERM sent to this process alone must
  // reach the server); later ones, and the copy Ctrl-C gives the whole group, need no second stop.
  // The listeners stay, so no repeated signal can end this process before the server has stopped.
  let forwarded = false;
  const forward = (signal: NodeJS.Signals) => {
    if (forwarded) return;
    forwarded = true;
    server.kill(signal);
  };
  process.on("SIGTERM", forward);
  process.on("SIGINT", forward);
  server.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + constants.signals[signal] : 1)));
  await announceWhenReady(
    `http://${env.HOST.includes(":") ? `[${env.HOST}]` : env.HOST}:${env.PORT}`,
    env.ADMIN_PASSWORD === DEMO_ADMIN_PASSWORD,
    env.DEMO_MODE,
    () => forwarded || server.exitCode !== null,
    // A stand-in that is not on the port asked for (a taken default traded for a free one): found in the server's run file.
    () => {
      const asked = `http://127.0.0.1:${env.PSP_PORT ?? DEFAULT_PSP_PORT}`;
      const used = server.pid === undefined || env.PSP_URL ? undefined : runFileOf(server.pid)?.pspUrl;
      return used && used !== asked ? ` Port ${DEFAULT_PSP_PORT} is taken: its provider stand-in listens on ${used}.` : "";
    },
  );
}

/**
 * One line once the server answers healthy, so a newcomer knows where to
 * click: the address, the pages, and the demo password when it is the one
 * in use. Nothing if the run stops first.
 */
async function announceWhenReady(
  url: string,
  demoPassword: boolean,
  lab: boolean,
  stopped: () => boolean,
  standIn: () => string,
): Promise<void> {
  while (!stopped()) {
    const healthy = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (healthy) {
      const pages = [
        `${url}/checkout`,
        ...(lab ? [`${url}/lab`] : []),
        `${url}/admin${demoPassword ? ` (password "${DEMO_ADMIN_PASSWORD}")` : ""}`,
        `${url}/docs`,
      ];
      process.stderr.write(`Ready on ${url}: ${pages.join(", ")}.${standIn()} Ctrl-C stops everything.\n`);
      return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

main().catch((error: unknown) => fail(error instanceof Error ? error.message : String(error)));
