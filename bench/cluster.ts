/**
 * `npm run bench -- --cluster`: the scaled-out topology against one plain
 * instance, in one run. Three configurations of the same build, on the same
 * fresh database, with the same stand-in:
 *
 *   direct        one instance, the primary directly (no HAProxy, no PgBouncer)
 *   cluster ×1    HAProxy → one instance → PgBouncer → the primary
 *   cluster ×N    HAProxy → N instances → PgBouncer → the primary
 *
 * (×1 is the ×N topology with all but one instance in HAProxy maintenance.)
 * Two REST calls: a payment with a fresh Idempotency-Key (claim, provider
 * charge, ledger, stored answer) and the replay of a stored key. Rounds
 * alternate the order of the configurations; every figure is the median of
 * the rounds. CPU per operation is read from /proc for each process of the
 * topology, so the table says where the two cores went.
 *
 * `--ha`: the database is the HA one (scripts/cluster/patroni.ts: a primary
 * and a standby under Patroni), and the configurations are
 *
 *   direct        one instance, the primary directly; the admin's overview reads the primary
 *   synchronous   HAProxy → N instances → PgBouncer → the primary, commits wait for the standby;
 *                 the overview reads the standby (DATABASE_REPLICA_URL)
 *   asynchronous  the same, with Patroni's synchronous_mode switched off between rounds
 *
 * with a third call, the dashboard's overview (the keys list and the
 * counts, as an operator's browser polls them), and a `standby` CPU column
 * (the standby's PostgreSQL processes). The `postgres` column is the
 * primary's: the overview's row says what reading the standby takes off it.
 */
import { rmSync } from "node:fs";
import { availableParallelism } from "node:os";
import { performance } from "node:perf_hooks";
import { randomUUID } from "node:crypto";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { scratchClusterParent } from "../db/cluster-home";
import * as schema from "../db/schema";
import { freeHaPorts, startHaDatabase } from "../scripts/cluster/patroni";
import { startCluster, type Cluster } from "../scripts/cluster/topology";
import { addOperator, OperatorRole } from "../server/admin/operators";
import { createTenant } from "../server/tenants/service";
import { createFreshDatabase, freePort } from "../tests/support/database";
import { client, type Client } from "./http";
import { machine, proc, TICK_US } from "./cpu";
import { drive, median, type Load } from "./measure";
import { table } from "./report";

export type ClusterBenchOptions = { instances: number; load: Load; rounds: number; ha?: boolean };

type Target = { name: string; url: string; prepare: () => Promise<void> };
type Part = "client" | "app" | "haproxy" | "pgbouncer" | "provider" | "postgres" | "standby" | "other";
type Measured = { opsPerSec: number; p50: number; p99: number; cpuUs: Record<Part, number> };

/** utime + stime of a process in µs; 0 once it is gone. */
function processCpu(pid: number | undefined): number {
  const stat = pid ? proc(`${pid}/stat`) : undefined;
  if (stat === undefined) return 0;
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * TICK_US;
}

export async function runClusterBench(options: ClusterBenchOptions): Promise<string> {
  const started = performance.now();
  const PARTS: Part[] = [
    "client",
    "app",
    "haproxy",
    "pgbouncer",
    "provider",
    "postgres",
    ...(options.ha ? (["standby"] as const) : []),
    "other",
  ];
  const runDir = scratchClusterParent("bench-cluster");
  const ha = options.ha ? await startHaDatabase({ ports: await freeHaPorts(), runDir: `${runDir}/ha`, synchronous: true }) : undefined;
  const fresh = ha ? { url: ha.url, dispose: ha.stop } : await createFreshDatabase("bench_cluster");
  const probe = postgres(fresh.url, { max: 1, onnotice: () => {} });
  let cluster: Cluster | undefined;
  const http: Client[] = [];
  try {
    const instancePorts: number[] = [];
    for (let i = 0; i < options.instances; i++) instancePorts.push(await freePort());
    cluster = await startCluster({
      primaryUrl: fresh.url,
      replicaUrl: ha?.replicaUrl,
      instancePorts,
      port: await freePort(),
      poolerPort: await freePort(),
      pspPort: await freePort(),
      runDir,
      pspWebhookSecret: "whsec_bench_only",
      instanceEnv: { ADMIN_PASSWORD: "a bench admin password", DEMO_MODE: "false", LOG_LEVEL: "warn" },
    });
    // With --ha the direct instance is also the baseline of the overview: it reads the primary.
    const direct = await cluster.startDirectInstance(await freePort(), { DATABASE_REPLICA_URL: undefined });
    const { token } = await createTenant(drizzle({ client: probe, schema }), "bench");
    const c = cluster;
    const names = c.instances.map((i) => i.name);
    const only = async (count: number) => {
      for (const [n, name] of names.entries())
        await c.haproxyCommand(`set server instances/${name} state ${n < count ? "ready" : "maint"}`);
    };
    const synchronous = (on: boolean) => async () => {
      await only(options.instances);
      if (ha && ha.synchronous() !== on) await ha.setSynchronous(on);
    };
    const targets: Target[] = ha
      ? [
          { name: "direct, 1 instance, synchronous", url: direct.url, prepare: synchronous(true) },
          { name: `HAProxy+PgBouncer, ${options.instances} instances, synchronous`, url: c.url, prepare: synchronous(true) },
          { name: `HAProxy+PgBouncer, ${options.instances} instances, asynchronous`, url: c.url, prepare: synchronous(false) },
        ]
      : [
          { name: "direct, 1 instance", url: direct.url, prepare: async () => undefined },
          { name: "HAProxy+PgBouncer, 1 instance", url: c.url, prepare: () => only(1) },
          { name: `HAProxy+PgBouncer, ${options.instances} instances`, url: c.url, prepare: () => only(options.instances) },
        ];

    const postgresPids = async () =>
      (await probe<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database() or datname is null`).map(
        (r) => r.pid,
      );
    // The standby's processes (its startup and walreceiver, the overview's backends), read on the standby itself.
    const standby = ha ? postgres(ha.replicaUrl, { max: 1, onnotice: () => {} }) : undefined;
    const standbyPids = async () => (standby ? (await standby<{ pid: number }[]>`select pid from pg_stat_activity`).map((r) => r.pid) : []);
    const snapshot = async (): Promise<Record<Part, number> & { machine: number }> => {
      const pids = c.pids();
      const [pg, replica] = await Promise.all([postgresPids(), standbyPids()]);
      return {
        client: processCpu(process.pid),
        app: [...pids.instances, direct.pid()].reduce((n: number, pid) => n + processCpu(pid), 0),
        haproxy: processCpu(pids.haproxy),
        pgbouncer: processCpu(pids.pooler),
        provider: processCpu(pids.psp),
        postgres: pg.reduce((n, pid) => n + processCpu(pid), 0),
        standby: replica.reduce((n, pid) => n + processCpu(pid), 0),
        other: 0,
        machine: machine()!.busy,
      };
    };

    const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
    const body = JSON.stringify({ amount: "10.00", currency: "EUR", destination: "acct_bench" });
    const pay = (h: Client) => async () => {
      const r = await h.send("POST", "/api/v1/payments", { ...headers, "Idempotency-Key": `bench-${randomUUID()}` }, body);
      if (r.status !== 201) throw new Error(`payment answered ${r.status}: ${r.body.slice(0, 200)}`);
    };
    // Stored keys to replay, made once through the direct instance.
    const stored: string[] = [];
    const maker = client(direct.url, options.load.concurrency);
    http.push(maker);
    await drive(
      async (n) => {
        const key = `bench-stored-${n}-${randomUUID()}`;
        const r = await maker.send("POST", "/api/v1/payments", { ...headers, "Idempotency-Key": key }, body);
        if (r.status !== 201) throw new Error(`payment answered ${r.status}`);
        stored.push(key);
      },
      { ...options.load, warmupMs: 0, durationMs: 2000 },
    );
    const replay = (h: Client) => async (n: number) => {
      const r = await h.send("POST", "/api/v1/payments", { ...headers, "Idempotency-Key": stored[n % stored.length]! }, body);
      if (r.status !== 201 || r.headers["idempotent-replayed"] !== "true")
        throw new Error(`replay answered ${r.status} (replayed: ${String(r.headers["idempotent-replayed"])})`);
    };

    // The dashboard's overview as an operator's browser polls it: the first page of keys and the counts, one session per configuration.
    const viewer = { name: `bench-${randomUUID().slice(0, 8)}`, password: "a bench operator password" };
    if (ha) await addOperator(drizzle({ client: probe, schema }), viewer.name, OperatorRole.Viewer, viewer.password);
    const overview = (h: Client) => {
      let cookie: Promise<string> | undefined;
      return async () => {
        const session = await (cookie ??= signIn(h, viewer));
        for (const path of ["admin.keys.list", "admin.keys.counts"]) {
          const r = await h.send("GET", `/api/trpc/${path}?input=${encodeURIComponent("{}")}`, { cookie: session });
          if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${r.body.slice(0, 200)}`);
        }
      };
    };
    const scenarios = [
      { name: "payment, fresh key", op: pay },
      { name: "replay of a stored key", op: replay },
      ...(ha ? [{ name: "admin overview (list + counts)", op: overview }] : []),
    ];
    // Unmeasured: each configuration's JIT, connection pools and caches settle before the first round.
    for (const target of targets) {
      await target.prepare();
      const h = client(target.url, options.load.concurrency);
      http.push(h);
      for (const scenario of scenarios) await drive(scenario.op(h), { ...options.load, warmupMs: 0, durationMs: 1500 });
      h.close();
    }
    const samples = new Map<string, Measured[]>();
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const target of order) {
        await target.prepare();
        const h = client(target.url, options.load.concurrency);
        http.push(h);
        for (const scenario of scenarios) {
          // drive takes a snapshot at each edge of its window: the topology's, kept here.
          const edges: Awaited<ReturnType<typeof snapshot>>[] = [];
          const sample = await drive(scenario.op(h), {
            ...options.load,
            cpu: async () => {
              edges.push(await snapshot());
              return { self: 0, loop: performance.eventLoopUtilization() };
            },
          });
          const [from, to] = edges;
          const ops = Math.max(1, sample.count);
          const cpuUs = {} as Record<Part, number>;
          for (const part of PARTS) cpuUs[part] = (to![part] - from![part]) / ops;
          const known = PARTS.filter((p) => p !== "other").reduce((n, p) => n + (to![p] - from![p]), 0);
          cpuUs.other = Math.max(0, to!.machine - from!.machine - known) / ops;
          const key = `${target.name}|${scenario.name}`;
          samples.set(key, [...(samples.get(key) ?? []), { opsPerSec: sample.opsPerSec, p50: sample.p50, p99: sample.p99, cpuUs }]);
        }
        h.close();
      }
    }
    await only(options.instances);

    await standby?.end({ timeout: 5 });
    const [{ version } = { version: "?" }] = await probe<{ version: string }[]>`select current_setting('server_version') as version`;
    const rows: string[][] = [];
    for (const scenario of scenarios) {
      const base = samples.get(`${targets[0]!.name}|${scenario.name}`)!;
      for (const target of targets) {
        const s = samples.get(`${target.name}|${scenario.name}`)!;
        const m = (f: (x: Measured) => number) => median(s.map(f));
        const ratio = median(s.map((x, i) => x.opsPerSec / base[i]!.opsPerSec));
        rows.push([
          scenario.name,
          target.name,
          Math.round(m((x) => x.opsPerSec)).toLocaleString("en-US"),
          m((x) => x.p50).toFixed(1),
          m((x) => x.p99).toFixed(1),
          `${ratio.toFixed(2)}×`,
          ...PARTS.map((p) => Math.round(m((x) => x.cpuUs[p])).toLocaleString("en-US")),
        ]);
      }
    }
    const header = ["scenario", "configuration", "ops/s", "p50 ms", "p99 ms", "vs direct", ...PARTS.map((p) => `${p} µs`)];
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    return [
      `Cluster bench: PostgreSQL ${version} (${ha ? "Patroni: a primary and a standby" : process.env.DATABASE_URL ? "DATABASE_URL" : "embedded"}), ${availableParallelism()} cores, ` +
        `concurrency ${options.load.concurrency}, median of ${options.rounds} rounds of ${options.load.durationMs / 1000} s (+${options.load.warmupMs / 1000} s warm-up), ${seconds} s in all`,
      `CPU columns: microseconds of CPU per operation, per process group (app = the instances;${ha ? " postgres = the primary's PostgreSQL, standby = the standby's;" : ""} other = the rest of the machine).`,
      "",
      table(header, rows, new Set(header.map((_, i) => i).slice(2))),
      "",
    ].join("\n");
  } finally {
    for (const h of http) h.close();
    await probe.end({ timeout: 5 });
    await cluster?.stop();
    await fresh.dispose();
    rmSync(runDir, { recursive: true, force: true });
  }
}

/** Signs `operator` in through the instance (a same-origin JSON POST, as the dashboard's form): its session cookie. */
async function signIn(h: Client, operator: { name: string; password: string }): Promise<string> {
  const r = await h.send(
    "POST",
    "/admin/session",
    { "content-type": "application/json", origin: h.origin },
    JSON.stringify({ operator: operator.name, password: operator.password }),
  );
  const cookie = [r.headers["set-cookie"] ?? []].flat()[0]?.split(";")[0];
  if (r.status !== 200 || !cookie) throw new Error(`sign-in answered ${r.status}: ${r.body.slice(0, 200)}`);
  return cookie;
}
