/**
 * A PgBouncer (Debian's package, /usr/sbin/pgbouncer) in transaction mode in
 * front of one PostgreSQL, for the pooler test and `npm run cluster`. It
 * forwards every database name to the upstream server (`*`), so a database
 * created there after the start (a test run's fresh one) is reachable too.
 *
 * PgBouncer refuses to run as root, so as root it runs as the `postgres`
 * user, which must reach `runDir`: give a directory under the project cache
 * (db/cluster-home.ts), not one inside a private `mktemp -d` folder.
 */
import { spawn } from "node:child_process";
import { chownSync, closeSync, existsSync, openSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ClusterSetupError, postgresRunDir } from "./cluster-home";

const PGBOUNCER_BINARY = "/usr/sbin/pgbouncer";

export type PgBouncerOptions = {
  /** PostgreSQL itself; PgBouncer logs in to it with this URL's host, port, user and password. */
  upstreamUrl: string;
  /** The loopback port PgBouncer listens on. */
  port: number;
  /** Where its generated pgbouncer.ini, userlist.txt and pgbouncer.log go (created when missing). */
  runDir: string;
  /** Server connections per database and user (default_pool_size); default 20. */
  poolSize?: number;
};

export type RunningPgBouncer = {
  /** The upstream URL with PgBouncer's host and port: same user, password and database. */
  url: string;
  pid: number;
  /** Resolves once PgBouncer has exited (SIGTERM: immediate shutdown; SIGKILL after 5 s). */
  stop: () => Promise<void>;
};

const READY_TIMEOUT_MS = 10_000;

/** The PgBouncer binary when it is installed, else undefined. */
export function pgBouncerBinary(): string | undefined {
  return existsSync(PGBOUNCER_BINARY) ? PGBOUNCER_BINARY : undefined;
}

/** A connection-string value in PgBouncer's [databases] syntax. */
const quoted = (value: string) => `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;

export async function startPgBouncer(options: PgBouncerOptions): Promise<RunningPgBouncer> {
  const binary = pgBouncerBinary();
  if (!binary) throw new ClusterSetupError(`PgBouncer is not installed (${PGBOUNCER_BINARY} is missing): apt-get install -y pgbouncer`);
  const upstream = new URL(options.upstreamUrl);
  const user = decodeURIComponent(upstream.username || "postgres");
  const password = decodeURIComponent(upstream.password);
  const runDir = path.resolve(options.runDir);
  const runAs = postgresRunDir(runDir, "PgBouncer");

  const ini = path.join(runDir, "pgbouncer.ini");
  const userlist = path.join(runDir, "userlist.txt");
  const logPath = path.join(runDir, "pgbouncer.log");
  const host = upstream.hostname.replace(/^\[|\]$/g, "");
  const target = [`host=${quoted(host)}`, `port=${upstream.port || "5432"}`].join(" ");
  writeFileSync(
    ini,
    [
      "[databases]",
      // Any database name: forwarded to the same name upstream, logging in as the client's user.
      `* = ${target}`,
      "",
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${options.port}`,
      // No Unix socket: nothing of it to clean up, and nobody reaches it by accident.
      "unix_socket_dir =",
      "pool_mode = transaction",
      `default_pool_size = ${options.poolSize ?? 20}`,
      "min_pool_size = 0",
      "reserve_pool_size = 0",
      "max_client_conn = 200",
      // With a password the client proves it (SCRAM, from the plain-text userlist); without, the upstream trusts loopback and so do we.
      `auth_type = ${password ? "scram-sha-256" : "trust"}`,
      `auth_file = ${userlist}`,
      `admin_users = ${user}`,
      // A net under the app's own SET LOCAL idle_in_transaction_session_timeout.
      "idle_transaction_timeout = 60",
      // PgBouncer queues a query while PostgreSQL is away instead of failing it, so with its own default (120 s) a
      // request caught by an outage hangs for two minutes; dropped after 10 s, the app answers 503 with Retry-After.
      "query_wait_timeout = 10",
      // After PostgreSQL comes back, the next login is tried within a second, not PgBouncer's default 15 s.
      "server_login_retry = 1",
      "log_connections = 0",
      "log_disconnections = 0",
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  writeFileSync(userlist, `"${user.replace(/"/g, '""')}" "${password.replace(/"/g, '""')}"\n`, { mode: 0o600 });
  if (runAs) for (const file of [ini, userlist]) chownSync(file, runAs.uid, runAs.gid);

  const log = openSync(logPath, "a", 0o600);
  const logStart = statSync(logPath).size;
  // Its own process group: a Ctrl-C to the run's group must not take the pooler down before the app that uses it.
  const child = spawn(binary, [ini], {
    detached: true,
    stdio: ["ignore", log, log],
    // Its own folder: the clone may be in a folder the postgres user cannot enter.
    cwd: path.dirname(ini),
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
  });
  closeSync(log);
  child.unref();
  const pid = child.pid ?? 0;
  let exited = false;
  const gone = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.once("error", () => resolve());
  }).then(() => void (exited = true));
  // An owner that ends without stopping it (an uncaught error) still takes it down.
  const onExit = () => {
    if (!exited) process.kill(pid, "SIGKILL");
  };
  process.once("exit", onExit);

  const stop = async () => {
    process.removeListener("exit", onExit);
    if (exited) return;
    process.kill(pid, "SIGTERM");
    const killed = setTimeout(() => !exited && process.kill(pid, "SIGKILL"), 5000);
    await gone;
    clearTimeout(killed);
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  // Its own line, not a connect: another program on the port would answer a connect too.
  while (!listening(logPath, logStart, options.port)) {
    if (exited || Date.now() > deadline) {
      await stop();
      const why = exited
        ? `it exited at start-up: ${lastError(logPath) ?? "no error logged"}`
        : `it did not listen within ${READY_TIMEOUT_MS / 1000} s`;
      throw new ClusterSetupError(`PgBouncer on port ${options.port} could not start: ${why} (log: ${logPath})`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  upstream.hostname = "127.0.0.1";
  upstream.port = String(options.port);
  return { url: upstream.toString(), pid, stop };
}

function listening(logPath: string, from: number, port: number): boolean {
  try {
    return readFileSync(logPath, "utf8").slice(from).includes(`listening on 127.0.0.1:${port}`);
  } catch {
    return false;
  }
}

/** PgBouncer's last ERROR/FATAL line, as one line. */
function lastError(logPath: string): string | undefined {
  try {
    return readFileSync(logPath, "utf8")
      .slice(-8192)
      .split("\n")
      .filter((l) => /\b(ERROR|FATAL)\b/.test(l))
      .at(-1)
      ?.trim();
  } catch {
    return undefined;
  }
}
