/**
 * `npm run bench`: what idempotency costs, measured in one process against a
 * real PostgreSQL (DATABASE_URL's server, or an embedded one), in-process and
 * over HTTP. Prints one table and the ratios against their targets; it exits
 * 0 on a missed target (a benchmark reports) and non-zero only when a call
 * fails or the run cannot start. `--help` lists the options, each of the
 * other modes in a file of its own; README.md beside this file explains it.
 */
import { availableParallelism } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { answerHelp } from "../scripts/help";
import postgres from "postgres";
import { closeDatabase } from "../db/client";
import { openAppDatabase } from "../server/database";
import { app } from "../server/app";
import { logger } from "../server/logger";
import { createTenant } from "../server/tenants/service";
import { createFreshDatabase } from "../tests/support/database";
import { runAdminBench, timeAdmin } from "./admin";
import { runCleanupBench } from "./cleanup";
import { runClusterBench } from "./cluster";
import { runObservabilityBench } from "./observability";
import { connectRedis, peerCrashes, peersAlone, peerWrites, renderPeers } from "./peers";
import { runSweepBench, sweepUnderLoad } from "./sweep";
import { describeFill, fillLiveKeys, renderLiveKeys, Side, switchKeyTable, type Passes } from "./live-keys";
import { burst } from "./burst";
import { cpuProbe, enableStatements } from "./cpu";
import { drive, type Load } from "./measure";
import { render, type TransportResult } from "./report";
import { readVsReplay, recoverableWrites, storeKeys, writes } from "./scenarios";
import { inProcess, overHttp, type Transport } from "./transports";

answerHelp(`Usage: npm run bench [-- options]

What idempotency costs, against a real PostgreSQL (DATABASE_URL's server, or an
embedded one), in-process and over HTTP: one table, and the ratios against their
targets (bench/README.md). Exits 0 on a missed target, non-zero only when a call
fails or the run cannot start.

  --seconds S          measured time per run (0.5; with --cluster 2)
  --warmup S           seconds before it (0.1; with --cluster 0.5)
  --settle S           every scenario in turn for this long before the first round (20): V8
                       optimises the hot code for that long, and CPU per operation falls by a
                       third meanwhile
  --rounds N           rounds, the median reported (12; with --cluster 3)
  --concurrency N      callers at once (16)
  --replay-keys N      keys replayed in the replay scenario (2000)
  --burst-keys N       keys of the duplicate burst (30)
  --burst-callers N    callers per key in the burst (20)
  --statements         a stmts/op column (the server must preload pg_stat_statements)
  --live-keys N        then fill the key table with N live keys (and N/10 expired) over 100 tenants,
                       run the rounds again, time the dashboard and the sweep there, and print
                       each @N/@0 CPU ratio against its target (10,000,000: about 35 min and 15 GB)
  --no-admin           skip the dashboard at 1M keys (about 40 s; --live-keys times it at N instead)
  --no-cleanup         skip expiry under load (about 10 s)
  --peers              the plain write wrapped by two published libraries with Redis (REDIS_URL)
  --cluster            HAProxy + PgBouncer with 1 and --instances N (2) against one direct instance
  --ha                 with --cluster: the HA database (Patroni), sync against async commits
  --sweep              only the expiry sweep at scale (--sweep-keys N, 1000000)
  --observability      only the CPU per operation with metrics and tracing off and on
                       (--trace-ratio R, 1; --bare: outside any AsyncLocalStorage store)`);

const config = {
  options: {
    seconds: { type: "string" },
    warmup: { type: "string" },
    settle: { type: "string", default: "20" },
    rounds: { type: "string" },
    concurrency: { type: "string", default: "16" },
    "replay-keys": { type: "string", default: "2000" },
    "burst-keys": { type: "string", default: "30" },
    "burst-callers": { type: "string", default: "20" },
    statements: { type: "boolean", default: false },
    "live-keys": { type: "string" },
    "no-admin": { type: "boolean", default: false },
    "no-cleanup": { type: "boolean", default: false },
    cluster: { type: "boolean", default: false },
    instances: { type: "string", default: "2" },
    ha: { type: "boolean", default: false },
    sweep: { type: "boolean", default: false },
    "sweep-keys": { type: "string", default: "1000000" },
    peers: { type: "boolean", default: false },
    observability: { type: "boolean", default: false },
    "trace-ratio": { type: "string", default: "1" },
    bare: { type: "boolean", default: false },
  },
} as const;

function parsedOptions() {
  try {
    return parseArgs(config);
  } catch (error) {
    // An unknown or malformed option: one line naming it, not a stack.
    process.stderr.write(`${error instanceof Error ? error.message : String(error)} (npm run bench -- --help lists the options)\n`);
    process.exit(1);
  }
}

/**
 * Many short rounds: the CPU this machine spends on the same work drifts by a fifth within seconds, so the sides
 * a round compares must run close together, and a median of many rounds is steadier than one of a few long ones
 * (three rounds of 2 s put in-process wrapped/floor node us/op anywhere from 1.03 to 1.28 over four runs of one commit).
 * The cluster's rounds stay long: each reads every process of the topology from /proc, and the HA rounds switch
 * Patroni's commit mode in between.
 */
const ROUNDS = { seconds: "0.5", warmup: "0.1", rounds: "12" };
const CLUSTER_ROUNDS = { seconds: "2", warmup: "0.5", rounds: "3" };

const parsed = parsedOptions().values;
const values = { ...(parsed.cluster ? CLUSTER_ROUNDS : ROUNDS), ...parsed };
/** The options that take a value: every one of them a number. */
type Numeric = { [K in keyof typeof values]-?: (typeof values)[K] extends boolean ? never : K }[keyof typeof values];
const positive = (name: Numeric) => {
  const n = Number(values[name]);
  if (!(n > 0)) throw new Error(`--${name} must be a positive number, got ${values[name]}`);
  return n;
};
const liveKeys = values["live-keys"] === undefined ? undefined : Math.floor(positive("live-keys"));
const base: Load = { concurrency: positive("concurrency"), warmupMs: positive("warmup") * 1000, durationMs: positive("seconds") * 1000 };
const rounds = positive("rounds");

/**
 * Unmeasured calls of every kind in turn, for `--settle` seconds, so no round pays for the JIT and cold caches.
 * Half a second of each was not enough: over the first 20 s or so of load V8 keeps optimising the hot code and
 * CPU per operation falls by a third, so the first rounds compared sides at different stages of it.
 */
async function warmUp(t: Transport, paymentId: string) {
  const short = { ...base, warmupMs: 0, durationMs: 500 };
  const input = { amountMinor: 100, currency: "EUR", destination: "acct_warmup" };
  const until = performance.now() + positive("settle") * 1000;
  do {
    await drive(async () => void (await t.plain(input)), short);
    await drive(async (n) => t.recoverable(`bench-warmup-rec-${t.name}-${n}-${Date.now()}`, input), short);
    await drive(async (n) => t.recoverableFloor(`bench-warmup-recfloor-${t.name}-${n}-${Date.now()}`, input), short);
    await drive(async (n) => void (await t.wrapped(`bench-warmup-${t.name}-${n}-${Date.now()}`, input, 1)), short);
    await drive((n) => t.floor(`bench-warmup-floor-${t.name}-${n}-${Date.now()}`, input), short);
    await drive(() => t.read(paymentId), short);
  } while (performance.now() < until);
}

async function main() {
  if (values.ha && !values.cluster) throw new Error("--ha goes with --cluster");
  if (values.cluster) {
    process.stdout.write(await runClusterBench({ instances: positive("instances"), load: base, rounds, ha: values.ha }));
    return;
  }
  // Every idempotency event is also an info log line; at thousands a second
  // they would bury the table on the terminal. Events still reach
  // idempotency_events in batches, as in production.
  logger.level = "warn";
  const started = performance.now();
  const fresh = await createFreshDatabase("bench");
  // The CPU probe's own connection: a snapshot must not queue behind the load in the app's pool.
  const probe = postgres(fresh.url, { max: 1, onnotice: () => {} });
  const redis = values.peers ? await connectRedis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379") : undefined;
  try {
    // The app's own pool: its connections carry the transaction limits from their start, as the server's do.
    const { sql, db } = openAppDatabase(fresh.url, { max: 20, pooled: app.settings.DATABASE_POOLED });
    if (values.statements) await enableStatements(probe);
    // Event batches are written at the window's edges, so each window pays for its own events (replay counts keep their minute).
    const also = () => (redis ? [redis.pid] : []);
    const load: Load = {
      ...base,
      cpu: cpuProbe(probe, () => app.eventLog.flush({ replays: false }), { statements: values.statements, also }),
    };
    const [{ version } = { version: "?" }] = await sql<{ version: string }[]>`select current_setting('server_version') as version`;
    const { tenant, token } = await createTenant(db, "bench");
    const tenantWithToken = { ...tenant, token };
    const server = `PostgreSQL ${version} (${app.settings.DATABASE_URL ? "DATABASE_URL" : "embedded"}), ${availableParallelism()} cores`;

    const local = inProcess(tenantWithToken);
    if (values.sweep) {
      process.stdout.write(`${server}\n`);
      return await runSweepBench(sql, local, load, positive("sweep-keys"));
    }
    const stored = await storeKeys(local, positive("replay-keys"), load.concurrency);
    // The pool's statements were first planned on empty tables, where a key's lookup by (tenant_id, key) can
    // get a cached plan through the (tenant_id, state, created_at, key) index that walks all of a tenant's keys.
    // A production table is past its first autoanalyze; ANALYZE gives these tables statistics and drops those plans.
    await sql`analyze`;
    if (values.observability) {
      const sampleRatio = positive("trace-ratio");
      const bare = values.bare;
      const title = `traces sampled ${sampleRatio * 100} %, ${bare ? "bare (no request store)" : "each request in a store, as Next.js runs it"}, Node.js ${process.versions.node}, PostgreSQL ${version}, ${availableParallelism()} cores, concurrency ${load.concurrency}, ${2 * rounds * (load.durationMs / 1000)} s per row`;
      const setup = { url: fresh.url, tenant: tenantWithToken, stored, concurrency: load.concurrency, sampleRatio, bare };
      return process.stdout.write(await runObservabilityBench(setup, rounds, load, title));
    }
    const measureTransports = async (): Promise<TransportResult[]> => {
      const results: TransportResult[] = [];
      for (const make of [async () => local, () => overHttp(tenantWithToken, load.concurrency)]) {
        const t = await make();
        try {
          await warmUp(t, stored[0]!.paymentId);
          const { plain, floor, bound } = await writes(t, rounds, load);
          const recoverable = await recoverableWrites(t, rounds, load);
          const reads = await readVsReplay(t, stored, rounds, load);
          const b = await burst(t, sql, tenant.id, positive("burst-keys"), positive("burst-callers"), load.cpu);
          results.push({ transport: t.name, writes: plain, floor, bound, recoverable, reads, burst: b });
        } finally {
          await t.close();
        }
      }
      return results;
    };
    const setupOf = (since: number, keys: string) =>
      `${server}, concurrency ${load.concurrency}, median of ${rounds} rounds of ${load.durationMs / 1000} s (+${load.warmupMs / 1000} s warm-up) after ${positive("settle")} s of every scenario in turn, ` +
      `${keys}, ${((performance.now() - since) / 1000).toFixed(0)} s in all`;
    const results = await measureTransports();
    process.stdout.write(render(results, setupOf(started, "the run's own keys")));
    if (redis) {
      // A peer adds less than one window's CPU swings by: at least 5 rounds, so one disturbed round moves no median.
      const peerRounds = Math.max(rounds, 5);
      const rows = await peerWrites(local, redis, peerRounds, load);
      const alone = await peersAlone(redis, peerRounds, load);
      const peerSetup = `in-process, Redis at ${redis.url}, PostgreSQL ${version}, concurrency ${load.concurrency}, median of ${peerRounds} rounds of ${load.durationMs / 1000} s`;
      process.stdout.write(`\n${renderPeers(rows, alone, await peerCrashes(local, redis, sql), peerSetup)}`);
    }
    if (liveKeys !== undefined) {
      const write = (line: string) => process.stdout.write(line);
      const n = liveKeys.toLocaleString("en-US");
      write(`\nA second key table with ${n} live keys:\n`);
      const fill = await fillLiveKeys(sql, tenant.id, liveKeys, (line) => write(`${line}\n`));
      write(`${describeFill(fill)}\n`);
      const passes: Passes = { [Side.Empty]: [], [Side.Live]: [] };
      for (const side of [Side.Live, Side.Empty, Side.Empty, Side.Live]) {
        await switchKeyTable(sql, side);
        const measuring = performance.now();
        const pass = await measureTransports();
        passes[side].push(pass);
        const keys = side === Side.Live ? `${n} live keys` : "the run's own keys";
        write(`\n${render(pass, setupOf(measuring, `pass ${passes.live.length + passes.empty.length} of 4, ${keys}`))}`);
      }
      write(`\nAdmin dashboard at ${n} live keys:\n`);
      const admin = await timeAdmin(sql, { tenantId: tenant.id, keyPrefix: "0a" }, write);
      // Last: it deletes the expired tenth the rounds and the dashboard above ran beside.
      const sweep = await sweepUnderLoad(local, load);
      write(`\n${renderLiveKeys(passes, sweep, admin, liveKeys)}`);
    }
    // The dashboard at scale, on the same database, after the load (its keys stay out of the way above).
    if (!values["no-cleanup"]) await runCleanupBench(sql, local, load);
    if (!values["no-admin"] && liveKeys === undefined) await runAdminBench(sql);
  } finally {
    await redis?.close();
    await app.eventLog.flush();
    await probe.end();
    await closeDatabase();
    await fresh.dispose();
  }
}

main().catch((error: unknown) => {
  logger.fatal({ err: error }, "benchmark failed");
  logger.flush();
  process.exitCode = 1;
});
