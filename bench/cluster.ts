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
 */
import { readFileSync, rmSync } from "node:fs";
import { availableParallelism } from "node:os";
import { performance } from "node:perf_hooks";
import { randomUUID } from "node:crypto";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { scratchClusterParent } from "../db/cluster-home";
import * as schema from "../db/schema";
import { startCluster, type Cluster } from "../scripts/cluster/topology";
import { createTenant } from "../server/tenants/service";
import { createFreshDatabase, freePort } from "../tests/support/database";
import { client, type Client } from "./http";
import { drive, median, type Load } from "./measure";

export type ClusterBenchOptions = { instances: number; load: Load; rounds: number };

type Target = { name: string; url: string; prepare: () => Promise<void> };
type Part = "client" | "app" | "haproxy" | "pgbouncer" | "provider" | "postgres" | "other";
const PARTS: Part[] = ["client", "app", "haproxy", "pgbouncer", "provider", "postgres", "other"];
type Measured = { opsPerSec: number; p50: number; p99: number; cpuUs: Record<Part, number> };

const TICK_US = 10_000;

/** utime + stime of a process in µs; 0 once it is gone. */
function processCpu(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * TICK_US;
  } catch {
    return 0;
  }
}

function machineBusy(): number {
  const fields = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return (user + nice + system + irq + softirq + steal) * TICK_US;
}

export async function runClusterBench(options: ClusterBenchOptions): Promise<string> {
  const started = performance.now();
  const fresh = await createFreshDatabase("bench_cluster");
  const runDir = scratchClusterParent("bench-cluster");
  const probe = postgres(fresh.url, { max: 1, onnotice: () => {} });
  let cluster: Cluster | undefined;
  const http: Client[] = [];
  try {
    const instancePorts: number[] = [];
    for (let i = 0; i < options.instances; i++) instancePorts.push(await freePort());
    cluster = await startCluster({
      primaryUrl: fresh.url,
      instancePorts,
      port: await freePort(),
      poolerPort: await freePort(),
      pspPort: await freePort(),
      runDir,
      pspWebhookSecret: "whsec_bench_only",
      instanceEnv: { ADMIN_PASSWORD: "a bench admin password", DEMO_MODE: "false", LOG_LEVEL: "warn" },
    });
    const direct = await cluster.startDirectInstance(await freePort());
    const { token } = await createTenant(drizzle({ client: probe, schema }), "bench");
    const c = cluster;
    const names = c.instances.map((i) => i.name);
    const only = async (count: number) => {
      for (const [n, name] of names.entries()) await c.haproxyCommand(`set server instances/${name} state ${n < count ? "ready" : "maint"}`);
    };
    const targets: Target[] = [
      { name: "direct, 1 instance", url: direct.url, prepare: async () => undefined },
      { name: "HAProxy+PgBouncer, 1 instance", url: c.url, prepare: () => only(1) },
      { name: `HAProxy+PgBouncer, ${options.instances} instances`, url: c.url, prepare: () => only(options.instances) },
    ];

    const postgresPids = async () => (await probe<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database() or datname is null`).map((r) => r.pid);
    const snapshot = async (): Promise<Record<Part, number> & { machine: number }> => {
      const pids = c.pids();
      const pg = await postgresPids();
      const parts = {
        client: processCpu(process.pid),
        app: [...pids.instances, direct.pid()].reduce((n: number, pid) => n + processCpu(pid), 0),
        haproxy: processCpu(pids.haproxy),
        pgbouncer: processCpu(pids.pooler),
        provider: processCpu(pids.psp),
        postgres: pg.reduce((n, pid) => n + processCpu(pid), 0),
        other: 0,
      };
      return { ...parts, machine: machineBusy() };
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
    await drive(async (n) => {
      const key = `bench-stored-${n}-${randomUUID()}`;
      const r = await maker.send("POST", "/api/v1/payments", { ...headers, "Idempotency-Key": key }, body);
      if (r.status !== 201) throw new Error(`payment answered ${r.status}`);
      stored.push(key);
    }, { ...options.load, warmupMs: 0, durationMs: 2000 });
    const replay = (h: Client) => async (n: number) => {
      const r = await h.send("POST", "/api/v1/payments", { ...headers, "Idempotency-Key": stored[n % stored.length]! }, body);
      if (r.status !== 201 || r.headers["idempotent-replayed"] !== "true") throw new Error(`replay answered ${r.status} (replayed: ${String(r.headers["idempotent-replayed"])})`);
    };

    const scenarios = [
      { name: "payment, fresh key", op: pay },
      { name: "replay of a stored key", op: replay },
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
          let from: Awaited<ReturnType<typeof snapshot>> | undefined;
          let to: Awaited<ReturnType<typeof snapshot>> | undefined;
          const sample = await drive(scenario.op(h), {
            ...options.load,
            cpu: async () => {
              const s = await snapshot();
              if (from) to = s;
              else from = s;
              return { self: 0, loop: performance.eventLoopUtilization() };
            },
          });
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
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) => r.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ");
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    return [
      `Cluster bench: PostgreSQL ${version} (${process.env.DATABASE_URL ? "DATABASE_URL" : "embedded"}), ${availableParallelism()} cores, ` +
        `concurrency ${options.load.concurrency}, median of ${options.rounds} rounds of ${options.load.durationMs / 1000} s (+${options.load.warmupMs / 1000} s warm-up), ${seconds} s in all`,
      "CPU columns: microseconds of CPU per operation, per process group (app = the instances; other = the rest of the machine).",
      "",
      line(header),
      widths.map((w) => "-".repeat(w)).join("  "),
      ...rows.map(line),
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
