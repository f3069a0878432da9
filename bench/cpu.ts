/**
 * Where the CPU went during a run, read from Linux's /proc: this process
 * (client and server alike), the PostgreSQL processes serving the run, and
 * the whole machine. On a small box where all three share the cores, CPU time per operation is
 * what bounds throughput, and it is far less disturbed by other load than
 * throughput is; what the rest of the machine used says whether a run was
 * disturbed at all. Elsewhere than Linux, or with PostgreSQL on another
 * host, only this process is measured.
 */
import { readFileSync } from "node:fs";
import { performance, type EventLoopUtilization } from "node:perf_hooks";
import type { Sql } from "postgres";

/**
 * Cumulative microseconds; `postgres` and the machine's are undefined where
 * they cannot be read. `loop` is the event loop's busy and idle time: all the
 * JavaScript runs on that one thread, so a loop busy all the time is the
 * app's limit whatever the other cores do.
 */
export type CpuSnapshot = {
  self: number;
  /**
   * The main thread's share of `self` (µs, Linux only): all the JavaScript runs there. The rest of `self` is
   * V8's helper threads (parallel scavenges, concurrent marking and sweeping, background compilation) and
   * libuv's pool: what a side's allocation and the garbage it leaves cost beside the code it runs.
   */
  main?: number;
  loop: EventLoopUtilization;
  postgres?: PostgresProcesses;
  /** When the snapshot was taken, in µs since boot (the clock of process start times). */
  at?: number;
  busy?: number;
  total?: number;
  /** Statements PostgreSQL has executed for the database (pg_stat_statements), when asked for. */
  statements?: number;
  /** CPU so far (µs) of the other servers the run relies on (`also`: Redis for the peers), when asked for. */
  also?: number;
};

/** This process alone: CPU of all its threads, and its event loop. */
export function selfSnapshot(): CpuSnapshot {
  const usage = process.cpuUsage();
  // /proc/<pid>/schedstat is the thread group leader's own: the main thread, not the process.
  return { self: usage.user + usage.system, main: onCpu(process.pid), loop: performance.eventLoopUtilization() };
}

/** /proc reports in clock ticks; USER_HZ is 100 on every Linux build Node supports. */
export const TICK_US = 10_000;

/** A file of /proc; undefined where it cannot be read (not Linux, or a process that has ended). */
export function proc(path: string): string | undefined {
  try {
    return readFileSync(`/proc/${path}`, "utf8");
  } catch {
    return undefined;
  }
}

export function machine(): { busy: number; total: number } | undefined {
  const fields = proc("stat")?.split("\n", 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  if (!fields) return undefined;
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
  const busy = user + nice + system + irq + softirq + steal;
  return { busy: busy * TICK_US, total: (busy + idle + iowait) * TICK_US };
}

/**
 * A process's time on a CPU so far (µs), from the scheduler's own account
 * (`/proc/<pid>/schedstat`, nanoseconds). `/proc/<pid>/stat` counts in clock
 * ticks of 10 ms: with 16 backends a window read that way can be off by up
 * to 16 × 10 ms, about a hundred fresh keys' PostgreSQL CPU in a 2 s window.
 */
function onCpu(pid: number): number | undefined {
  const ns = Number(proc(`${pid}/schedstat`)?.split(" ", 1)[0]);
  return Number.isFinite(ns) ? ns / 1000 : undefined;
}

/** Each PostgreSQL process's CPU so far (µs) and when it started (µs since boot). */
export type PostgresProcesses = Map<number, { cpu: number; start: number }>;

/** Microseconds since boot, on the clock /proc gives process start times in. */
function sinceBoot(): number | undefined {
  const uptime = proc("uptime");
  return uptime === undefined ? undefined : Number(uptime.split(" ", 1)[0]) * 1_000_000;
}

/** The given PostgreSQL processes as they stand; undefined when none is on this machine (a remote server). */
function postgres(pids: number[]): PostgresProcesses | undefined {
  const seen: PostgresProcesses = new Map();
  for (const pid of pids) {
    const stat = proc(`${pid}/stat`);
    if (stat === undefined) continue; // ended since it was listed, or not on this machine
    const close = stat.lastIndexOf(")");
    if (!stat.slice(stat.indexOf("(") + 1, close).startsWith("postgres")) continue;
    const f = stat.slice(close + 2).split(" ");
    seen.set(pid, { cpu: onCpu(pid) ?? (Number(f[11]) + Number(f[12])) * TICK_US, start: Number(f[19]) * TICK_US });
  }
  return seen.size ? seen : undefined;
}

/**
 * PostgreSQL's CPU between two snapshots, process by process: a process
 * seen at both edges adds what it used in between, and one that started
 * inside the window adds all it used. Summing the totals at each edge
 * instead would subtract the whole life of a process that ended in the
 * window and add the whole life of one first listed at the second edge;
 * neither belongs to the window. A process that ended in the
 * window is lost either way: the pool keeps its connections, so those are
 * rare (an autovacuum worker).
 */
export function postgresUsed(from: PostgresProcesses, to: PostgresProcesses, windowStart: number): number {
  let used = 0;
  for (const [pid, now] of to) {
    const before = from.get(pid);
    if (before && before.start === now.start) used += now.cpu - before.cpu;
    else if (now.start >= windowStart) used += now.cpu;
  }
  return used;
}

/**
 * Snapshots with PostgreSQL's share taken from the processes serving the
 * benchmark's database and the server's own (WAL writer, checkpointer...),
 * listed by the server itself; the backends of other databases on a shared
 * server are not counted (its own processes are, whoever they work for: use
 * a server of the benchmark's own for PostgreSQL CPU). Autovacuum is not
 * counted either: on the run's young tables it comes in bursts that land in
 * whichever window runs then (mostly the first scenarios), so it would move
 * one side of a pair and not the other. `sql` should be a
 * connection of its own, so taking a snapshot never waits behind the load.
 * `settle` runs before each snapshot: work the window caused but deferred
 * (the event batches) is then counted in the window that caused it.
 */
export function cpuProbe(
  sql: Sql,
  settle: () => Promise<void> = async () => undefined,
  options: { statements?: boolean; also?: () => number[] } = {},
): () => Promise<CpuSnapshot> {
  return async () => {
    await settle();
    const rows = await sql<{ pid: number }[]>`
      select pid from pg_stat_activity
      where (datname = current_database() or datname is null) and backend_type not like 'autovacuum%'`;
    const statements = options.statements ? await statementsSoFar(sql) : undefined;
    const also = options.also?.().reduce((sum, pid) => sum + (onCpu(pid) ?? Number.NaN), 0);
    return { ...selfSnapshot(), postgres: postgres(rows.map((r) => r.pid)), at: sinceBoot(), ...machine(), statements, also };
  };
}

/**
 * Loads pg_stat_statements into the run's database; the server must have it
 * in `shared_preload_libraries`, else this says so before the run starts.
 */
export async function enableStatements(sql: Sql): Promise<void> {
  await sql`create extension if not exists pg_stat_statements`;
  await statementsSoFar(sql);
}

/**
 * Every statement executed in this database so far, the probe's own reads of
 * the statistics views left out. A count, unlike CPU time, no other load on
 * the machine can move: what a round trip's statements cost stays for
 * `pg us/op` to say.
 */
async function statementsSoFar(sql: Sql): Promise<number> {
  const [row] = await sql<{ calls: string | null }[]>`
    select sum(s.calls)::text as calls from pg_stat_statements s
    where s.dbid = (select oid from pg_database where datname = current_database()) and s.query not like '%pg\_stat\_%'`;
  return Number(row?.calls ?? 0);
}

/**
 * Per operation (µs) for this process and PostgreSQL, how busy the event loop
 * was (0..1), and the share of the machine other processes used.
 */
export type CpuUse = {
  selfUs: number;
  /** Of `selfUs`, the main thread's (see CpuSnapshot.main). */
  mainUs?: number;
  loopBusy: number;
  postgresUs?: number;
  otherShare?: number;
  statementsPerOp?: number;
  alsoUs?: number;
};

export function cpuUse(from: CpuSnapshot, to: CpuSnapshot, ops: number): CpuUse {
  const used = (key: "main" | "total" | "busy" | "also" | "statements") =>
    to[key] !== undefined && from[key] !== undefined ? to[key] - from[key] : undefined;
  const perOp = (v: number | undefined) => (v === undefined ? undefined : v / ops);
  const self = to.self - from.self;
  const pg = to.postgres && from.postgres && from.at !== undefined ? postgresUsed(from.postgres, to.postgres, from.at) : undefined;
  const [total, busy, also] = [used("total"), used("busy"), used("also")];
  return {
    selfUs: self / ops,
    mainUs: perOp(used("main")),
    loopBusy: performance.eventLoopUtilization(to.loop, from.loop).utilization,
    postgresUs: perOp(pg),
    otherShare: busy !== undefined && total && pg !== undefined ? Math.max(0, busy - self - pg - (also ?? 0)) / total : undefined,
    statementsPerOp: perOp(used("statements")),
    alsoUs: perOp(also),
  };
}
