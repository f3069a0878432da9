/**
 * npm run cluster: the scaled-out topology on this machine (scripts/cluster/topology.ts) in front of
 * PostgreSQL: DATABASE_URL's server, the checkout's embedded cluster (the one `npm start` uses), or with
 * `--ha` two PostgreSQL 15 nodes under Patroni (scripts/cluster/patroni.ts), whose data persists in
 * `.data/ha/` (as root in the project cache). USAGE below lists the options and the ports. Everything
 * listens on loopback only, so the demo secrets (used when ADMIN_PASSWORD is unset) never face a network.
 * Generated configurations and logs are in `.data/cluster/`.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { type RunningPostgres } from "../db/embedded";
import { DEMO_ADMIN_PASSWORD } from "../server/env-schema";
import { type HaDatabase } from "./cluster/patroni";

function fail(message: string): never {
  process.stderr.write(`Cannot start the cluster: ${message}\n`);
  process.exit(1);
}

const port = (name: string, value: string | undefined, fallback: number): number => {
  const n = value === undefined ? fallback : Number(value);
  if (!Number.isInteger(n) || n < 1024 || n > 65535) fail(`--${name} must be a port from 1024 to 65535, got ${value}`);
  return n;
};

const USAGE = `Usage: npm run cluster [-- OPTIONS]

HAProxy in front of N instances of one build, PgBouncer (transaction mode), the
provider stand-in and PostgreSQL (DATABASE_URL's, or the embedded one), all on
loopback. Ctrl-C stops all of it.

  --instances N         instances behind HAProxy, 1 to 16 (default 2)
  --port P              HAProxy's front door (default 8080)
  --instance-port P     the first instance's port; the others follow (default 3001)
  --pooler-port P       PgBouncer (default 6432)
  --stats-port P        also HAProxy's read-only stats page on P
  --prometheus          also Prometheus, scraping every instance with ops/prometheus/alerts.yml
  --prometheus-port P   Prometheus's port (default 9090)
  --ha                  the database as two PostgreSQL 15 nodes under Patroni (etcd, a
                        synchronous standby), behind HAProxy's PostgreSQL side
  --ha-port P           with --ha: HAProxy's primary route P, replica route P+1, the nodes'
                        PostgreSQL P+2, P+3, their Patroni REST P+4, P+5, etcd P+6, P+7 (default 5440)
  --async               with --ha: asynchronous replication (a failover may lose acknowledged commits)
  --ha-dir DIR          with --ha: the nodes' data, configurations and logs (default .data/ha,
                        as root the project cache's ha/)
  --help                this text

Ports (all on 127.0.0.1) and what moves each:
  8080                  HAProxy, the front door: --port
  3001, 3002, ..        the instances, one each: --instance-port (the first; the others follow)
  6432                  PgBouncer: --pooler-port
  4010                  the provider stand-in: PSP_PORT=P (unset and 4010 taken by another
                        database's stand-in: a free port, on the "provider" line)
  54329                 the embedded PostgreSQL (no DATABASE_URL, no --ha): EMBEDDED_PG_PORT=P
                        (a free port when 54329 is taken; a running cluster keeps its own)
  9090                  Prometheus, with --prometheus: --prometheus-port
  (none)                HAProxy's stats page: only with --stats-port P
  5440, 5441            with --ha: HAProxy's PostgreSQL primary and replica routes: --ha-port P
  5442, 5443            with --ha: the nodes' PostgreSQL: --ha-port P (P+2, P+3)
  5444, 5445            with --ha: the nodes' Patroni REST API: --ha-port P (P+4, P+5)
  5446, 5447            with --ha: etcd's client and peer ports: --ha-port P (P+6, P+7)
`;

/** Relative to the working directory when inside it, else absolute (the project cache, as root). */
const shortPath = (file: string) => (path.relative(process.cwd(), file).startsWith("..") ? file : path.relative(process.cwd(), file));

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      help: { type: "boolean", default: false },
      instances: { type: "string", default: "2" },
      port: { type: "string" },
      "instance-port": { type: "string" },
      "pooler-port": { type: "string" },
      "stats-port": { type: "string" },
      prometheus: { type: "boolean", default: false },
      "prometheus-port": { type: "string" },
      ha: { type: "boolean", default: false },
      "ha-port": { type: "string" },
      async: { type: "boolean", default: false },
      "ha-dir": { type: "string" },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const instances = Number(values.instances);
  if (!Number.isInteger(instances) || instances < 1 || instances > 16) fail(`--instances must be 1 to 16, got ${values.instances}`);
  const haproxyPort = port("port", values.port, 8080);
  const firstInstancePort = port("instance-port", values["instance-port"], 3001);
  const poolerPort = port("pooler-port", values["pooler-port"], 6432);
  const statsPort = values["stats-port"] === undefined ? undefined : port("stats-port", values["stats-port"], 0);
  const { DEFAULT_PROMETHEUS_PORT, startPrometheus } = await import("./cluster/prometheus");
  const prometheusPort = port("prometheus-port", values["prometheus-port"], DEFAULT_PROMETHEUS_PORT);
  if (!values.ha && (values["ha-port"] !== undefined || values.async || values["ha-dir"] !== undefined))
    fail("--ha-port, --ha-dir and --async go with --ha");
  // The last of the eight ports must be a port too.
  const haPort = port("ha-port", values["ha-port"], 5440);
  if (values.ha) port("ha-port", String(haPort + 7), 0);

  // Until the cluster is up, a signal ends this process; what it started stops with it (their exit hooks).
  const early = (signal: NodeJS.Signals) => process.exit(signal === "SIGINT" ? 130 : 143);
  process.once("SIGINT", early);
  process.once("SIGTERM", early);
  const demo = !process.env.ADMIN_PASSWORD;
  // The same demo defaults as `npm start`: read by server/env below.
  if (demo) {
    process.env.ADMIN_PASSWORD = DEMO_ADMIN_PASSWORD;
    process.env.DEMO_MODE ??= "true";
    process.stderr.write(`ADMIN_PASSWORD is unset: /admin accepts the demo password "${process.env.ADMIN_PASSWORD}".\n`);
  }
  const { env, BAD_PORTS, DEFAULT_PSP_PORT } = await import("../server/env");
  if (BAD_PORTS.has(prometheusPort))
    fail(`--prometheus-port ${prometheusPort} is a port that fetch refuses (WHATWG bad port); choose another`);
  const { startEmbedded } = await import("../db/bootstrap");
  const { databaseSettings } = await import("../server/database");
  const { writeRunFile } = await import("../db/run-file");
  const { startCluster } = await import("./cluster/topology");
  const { recordsBesideEmbedded } = await import("../server/psp/process");
  const { HA_TIMINGS, haPortsFrom, startHaDatabase } = await import("./cluster/patroni");
  const { cacheDir, runsAsRoot, stateDir } = await import("../db/cluster-home");
  const note = (line: string) => process.stderr.write(`cluster: ${line}\n`);

  let embedded: RunningPostgres | undefined;
  let ha: HaDatabase | undefined;
  let primaryUrl = env.DATABASE_URL;
  if (values.ha) {
    if (primaryUrl) fail("--ha runs its own database: unset DATABASE_URL");
    ha = await startHaDatabase({
      ports: haPortsFrom(haPort),
      runDir: values["ha-dir"] ? path.resolve(values["ha-dir"]) : runsAsRoot() ? path.join(cacheDir(), "ha") : path.join(stateDir, "ha"),
      synchronous: !values.async,
      onLog: note,
    });
    primaryUrl = ha.url;
  } else if (!primaryUrl) {
    embedded = await startEmbedded(databaseSettings(env), true);
    primaryUrl = embedded.url;
  }
  const stopEmbedded = async () => {
    await embedded?.stop();
    await ha?.stop();
  };

  const cluster = await startCluster({
    primaryUrl,
    replicaUrl: ha?.replicaUrl,
    instancePorts: Array.from({ length: instances }, (_, i) => firstInstancePort + i),
    port: haproxyPort,
    poolerPort,
    pspPort: env.PSP_PORT ?? DEFAULT_PSP_PORT,
    pspIfTaken: env.PSP_PORT === undefined ? "pick-free" : "refuse",
    // On the checkout's embedded cluster, the stand-in keeps `npm start`'s records: the payments there pair with them.
    pspDataFile: embedded ? recordsBesideEmbedded(embedded.dir, env.PSP_PORT ?? DEFAULT_PSP_PORT) : undefined,
    statsPort,
    runDir: path.join(stateDir, "cluster"),
    pspSlowMs: env.PSP_SLOW_MS,
    pspWebhookSecret: env.PSP_WEBHOOK_SECRET,
    seedDemo: env.SEED_DEMO,
    instanceEnv: { ADMIN_PASSWORD: env.ADMIN_PASSWORD, DEMO_MODE: String(env.DEMO_MODE), LOG_LEVEL: env.LOG_LEVEL },
    onLog: note,
  }).catch(async (error: unknown) => {
    await stopEmbedded();
    throw error;
  });
  const prometheus = values.prometheus
    ? await startPrometheus({
        port: prometheusPort,
        targets: cluster.instances.map((i) => new URL(i.url).host),
        runDir: path.join(stateDir, "cluster"),
      }).catch(async (error: unknown) => {
        await cluster.stop();
        await stopEmbedded();
        throw error;
      })
    : undefined;
  // The CLIs (tenant, reconcile, keys:*) find the primary and the stand-in here, as with `npm start`.
  const removeRunFile = writeRunFile({
    url: cluster.url,
    databaseUrl: primaryUrl,
    pspUrl: cluster.pspUrl,
    embeddedDir: embedded?.dir,
    ha: ha !== undefined,
  });

  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    const database = ha
      ? " and the HA database (HAProxy's PostgreSQL side, Patroni, PostgreSQL, etcd)"
      : embedded?.owned
        ? " and PostgreSQL"
        : "";
    note(`${signal}: stopping ${prometheus ? "Prometheus, " : ""}HAProxy, the instances, the stand-in, PgBouncer${database}…`);
    removeRunFile();
    await prometheus?.stop();
    await cluster.stop();
    await stopEmbedded();
    note("stopped");
    process.exit(0);
  };
  process.removeListener("SIGINT", early);
  process.removeListener("SIGTERM", early);
  process.on("SIGINT", (s) => void stop(s));
  process.on("SIGTERM", (s) => void stop(s));

  const lines = [
    `HAProxy          ${cluster.url}   (log: ${path.relative(process.cwd(), cluster.haproxyLog)})`,
    ...cluster.instances.map((i) => `instance ${i.name.padEnd(7)} ${i.url}   (log: ${path.relative(process.cwd(), i.logPath)})`),
    `PgBouncer        ${new URL(cluster.poolerUrl).host} (transaction mode)`,
    ...(ha
      ? [
          `PostgreSQL       ${new URL(ha.url).host} (HAProxy: the primary, by Patroni's GET /primary), ${new URL(ha.replicaUrl).host} (a standby, GET /replica)`,
          ...ha.nodes.map(
            (n) => `  node ${n.name}      PostgreSQL 15 on 127.0.0.1:${n.pgPort}, Patroni REST on http://127.0.0.1:${n.restPort}/`,
          ),
          `  etcd           ${ha.etcdUrl} (one member, authentication on: user root)`,
          `  passwords      ${shortPath(ha.credentialsPath)} (postgres and replicator by SCRAM, etcd's root; mode 0600)`,
          `  Patroni        ${ha.synchronous() ? "synchronous_mode" : "asynchronous replication"}, ttl ${HA_TIMINGS.ttl} s, loop_wait ${HA_TIMINGS.loop_wait} s, retry_timeout ${HA_TIMINGS.retry_timeout} s; patronictl -c ${shortPath(ha.nodes[0]!.configPath)} list`,
        ]
      : [`PostgreSQL       ${new URL(primaryUrl).host} (${embedded ? `embedded, ${embedded.dir}` : "DATABASE_URL"})`]),
    `provider         ${cluster.pspUrl}`,
    statsPort ? `HAProxy stats    http://127.0.0.1:${statsPort}/` : undefined,
    prometheus
      ? `Prometheus       ${prometheus.alertsUrl}   (user ${prometheus.user}, password ${prometheus.password}; rules: ops/prometheus/alerts.yml, log: ${path.relative(process.cwd(), prometheus.logPath)})`
      : undefined,
    "Ctrl-C stops all of it.",
  ].filter(Boolean);
  process.stdout.write(`The cluster is up:\n${lines.map((l) => `  ${l}`).join("\n")}\n`);
}

main().catch((error: unknown) => {
  const unknown = (error as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION";
  fail(`${error instanceof Error ? error.message : String(error)}${unknown ? " (npm run cluster -- --help lists the options)" : ""}`);
});
