/**
 * The HA database for `npm run cluster -- --ha` and the failover soak: two
 * PostgreSQL 15 nodes run by Patroni, a one-member etcd as Patroni's
 * consensus store, and HAProxy's PostgreSQL side (haproxy.ts) routing to
 * whichever node leads:
 *
 *   PgBouncer → HAProxy :primary ─(GET /primary on each node's Patroni)→ pg1 | pg2
 *                       :replica ─(GET /replica)────────────────────────→ the standby
 *
 * `synchronous: true` is Patroni's `synchronous_mode`: a commit is
 * acknowledged only once the standby has it, and Patroni never promotes a
 * standby that might lack one. Off, replication is asynchronous, and a
 * promoted standby may miss commits the old primary acknowledged. Not strict
 * (`synchronous_mode_strict` off): with the standby gone, the primary goes on
 * alone rather than refusing every write.
 *
 * Patroni 3.0 (Debian's) does not know PostgreSQL 18, so the nodes run the
 * machine's PostgreSQL 15 (`/usr/lib/postgresql/15/bin`). As root, Patroni,
 * its PostgreSQL and etcd run as the `postgres` user, in a directory it can
 * reach (the caller's `runDir`: the project cache then). Everything listens
 * on 127.0.0.1 only, and nothing trusts loopback: any local user could be
 * `postgres` otherwise, and a web page could reach etcd. The passwords are
 * made with the cluster and kept in `credentials.json` (0600) beside it, as
 * the embedded database keeps its own: PostgreSQL's `postgres` and
 * `replicator` log in with SCRAM (`pg_hba` has no trust line), and etcd
 * runs with authentication (its `root` user, handed to Patroni), a Host
 * allow-list (a rebinding page's name is a 421) and no CORS.
 *
 * A node's "machine" is its Patroni and its PostgreSQL together: `lose()`
 * SIGKILLs both at once, as a dead host would; `start()` brings the node back
 * (it rejoins as a standby, rewound with pg_rewind if it had diverged).
 * `killPostgres()` kills only the postmaster and its children: Patroni, alive,
 * restarts it in place.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, closeSync, existsSync, openSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ClusterSetupError, makeOwnedDir, postgresRunDir, type PostgresUser } from "../../db/cluster-home";
import { freePort } from "../../db/embedded";
import { lastLines, startDatabaseProxy } from "./haproxy";

const PATRONI_BIN = "/usr/bin/patroni";
const ETCD_BIN = "/usr/bin/etcd";
const PG15_BIN_DIR = "/usr/lib/postgresql/15/bin";

/** Short, for a demo on one machine: the leader key lives `ttl` seconds, so a lost primary is replaced about that long after. */
export const HA_TIMINGS = { ttl: 10, loop_wait: 1, retry_timeout: 4 } as const;

export type HaPorts = {
  /** HAProxy: the current primary. */
  primary: number;
  /** HAProxy: a running standby. */
  replica: number;
  /** Each node's PostgreSQL and Patroni REST API. */
  nodes: { pg: number; rest: number }[];
  etcd: number;
  etcdPeer: number;
};

/** The ports of `npm run cluster -- --ha --ha-port P`: P and P+1 HAProxy, P+2.. the nodes, then etcd. */
export function haPortsFrom(base: number, nodes = 2): HaPorts {
  return {
    primary: base,
    replica: base + 1,
    nodes: Array.from({ length: nodes }, (_, i) => ({ pg: base + 2 + i, rest: base + 2 + nodes + i })),
    etcd: base + 2 + 2 * nodes,
    etcdPeer: base + 3 + 2 * nodes,
  };
}

/** Eight free ports, not in a row (the soak and the bench, beside whatever else runs). */
export async function freeHaPorts(nodes = 2): Promise<HaPorts> {
  const each = [];
  for (let i = 0; i < nodes; i++) each.push({ pg: await freePort(), rest: await freePort() });
  return { primary: await freePort(), replica: await freePort(), nodes: each, etcd: await freePort(), etcdPeer: await freePort() };
}

export type HaOptions = {
  ports: HaPorts;
  /** Data, configurations and logs; as root it must be reachable by the postgres user (the project cache). */
  runDir: string;
  synchronous: boolean;
  onLog?: (line: string) => void;
};

export type HaRole = "leader" | "standby" | "down";

export type HaNode = {
  name: string;
  pgPort: number;
  restPort: number;
  /** Patroni's configuration (for `patronictl -c`) and log. */
  configPath: string;
  logPath: string;
  /** What the node's Patroni says it is now. */
  role: () => Promise<HaRole>;
  /** SIGKILLs the node's Patroni and PostgreSQL together: the machine is lost. */
  lose: () => void;
  /** SIGKILLs the node's PostgreSQL only; its Patroni lives on. */
  killPostgres: () => void;
  /** Starts the node's Patroni (after `lose`); resolves once it runs PostgreSQL again. */
  start: () => Promise<void>;
};

/** The passwords of an HA database, made with it; `credentials.json` in its directory holds them. */
type HaCredentials = { postgres: string; replicator: string; etcdRoot: string };

export type HaDatabase = {
  /** Through HAProxy to whichever node leads, as `postgres` with its password: what PgBouncer and the migrations use. */
  url: string;
  replicaUrl: string;
  nodes: HaNode[];
  etcdUrl: string;
  /** The file that holds the passwords (mode 0600). */
  credentialsPath: string;
  /** Whether commits wait for the standby now (`setSynchronous` changes it). */
  synchronous: () => boolean;
  /** Switches Patroni's synchronous_mode (in etcd, for the whole cluster) and waits until the cluster runs so. */
  setSynchronous: (on: boolean) => Promise<void>;
  /** The node that leads now, by Patroni's word. */
  leader: () => Promise<HaNode | undefined>;
  /** Resolves once a node leads and every other running node streams from it as the standby it should be. */
  healthy: (timeoutMs?: number) => Promise<HaNode>;
  stop: () => Promise<void>;
};

const READY_TIMEOUT_MS = 90_000;
const SCOPE = "exactly-once";

export async function startHaDatabase(options: HaOptions): Promise<HaDatabase> {
  for (const [what, file, pkg] of [
    ["Patroni", PATRONI_BIN, "patroni"],
    ["etcd", ETCD_BIN, "etcd-server"],
    ["PostgreSQL 15", path.join(PG15_BIN_DIR, "postgres"), "postgresql-15"],
  ] as const) {
    if (!existsSync(file)) throw new ClusterSetupError(`${what} is not installed (${file} is missing): apt-get install -y ${pkg}`);
  }
  const log = options.onLog ?? (() => undefined);
  const runDir = path.resolve(options.runDir);
  const runAs = postgresRunDir(runDir, "The HA database");
  const { credentials, credentialsPath } = haCredentials(runDir, options.ports.nodes.length);
  const stops: (() => Promise<void>)[] = [];
  const etcd = supervised("etcd", ETCD_BIN, etcdArgs(options.ports, path.join(runDir, "etcd")), path.join(runDir, "etcd.log"), runAs);
  // Patroni's unsafe REST calls (failover, restart, configuration) need this, new at every start; reads stay open for HAProxy's checks.
  const rest: RestCredentials = { username: "patroni", password: randomBytes(18).toString("base64url") };
  const nodes = options.ports.nodes.map((ports, i) => node(`pg${i + 1}`, ports, runDir, options, runAs, rest, credentials));
  // An owner that ends without stopping (an uncaught error, a signal during start-up) leaves nothing behind.
  // Patroni detaches its PostgreSQL (so it outlives a Patroni crash), hence each node's `lose`, which takes both.
  const onExit = () => {
    for (const n of nodes) n.lose();
    etcd.kill("SIGKILL");
  };
  process.on("exit", onExit);
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse())
      await stop().catch((error: unknown) => log(`stopping: ${error instanceof Error ? error.message : String(error)}`));
    process.removeListener("exit", onExit);
  };
  try {
    const etcdUrl = `http://127.0.0.1:${options.ports.etcd}`;
    stops.push(etcd.stop);
    await etcd.start();
    await waitFor(`etcd on ${etcdUrl}`, etcd, async () => (await get(`${etcdUrl}/health`))?.status === 200);
    await enableEtcdAuth(etcdUrl, credentials.etcdRoot);
    log(`etcd on 127.0.0.1:${options.ports.etcd}, with authentication`);

    stops.push(async () => {
      // The standbys first: a primary that stops first would be replaced by a promotion nobody needs.
      const leader = await leaderOf(nodes);
      for (const n of nodes.filter((n) => n !== leader)) await n.stop();
      await leader?.stop();
    });
    // The first node bootstraps the cluster (initdb) and leads; the second is then made from it with pg_basebackup.
    await nodes[0]!.start();
    await Promise.all(nodes.slice(1).map((n) => n.start()));

    const proxy = await startDatabaseProxy({
      primaryPort: options.ports.primary,
      replicaPort: options.ports.replica,
      nodes: nodes.map((n) => ({ name: n.name, pgPort: n.pgPort, restPort: n.restPort })),
      runDir,
    });
    stops.push(proxy.stop);
    let synchronous = options.synchronous;
    const ha: HaDatabase = {
      url: `postgres://postgres:${credentials.postgres}@127.0.0.1:${options.ports.primary}/postgres`,
      replicaUrl: `postgres://postgres:${credentials.postgres}@127.0.0.1:${options.ports.replica}/postgres`,
      nodes,
      etcdUrl,
      credentialsPath,
      synchronous: () => synchronous,
      setSynchronous: async (on) => {
        await patchConfig(nodes, rest, { synchronous_mode: on });
        synchronous = on;
        await ha.healthy();
      },
      leader: () => leaderOf(nodes),
      healthy: (timeoutMs = READY_TIMEOUT_MS) => healthyCluster(nodes, synchronous, timeoutMs),
      stop: stopAll,
    };
    // The bootstrap configuration counts only when the cluster is made: a kept one (npm run cluster -- --ha) is told.
    await ha.setSynchronous(options.synchronous);
    const leader = await ha.healthy();
    log(`Patroni: ${leader.name} leads, ${nodes.length - 1} ${synchronous ? "synchronous" : "asynchronous"} standby(s)`);
    return ha;
  } catch (error) {
    await stopAll();
    throw error;
  }
}

const CREDENTIALS_FILE = "credentials.json";

/**
 * The passwords of the HA database in `runDir`: made with it (a directory
 * with no node or etcd data yet) and written 0600, never over a file that
 * exists; read back when it is kept. A kept directory without the file was
 * made by a version that trusted loopback: it is refused in one line rather
 * than run open.
 */
function haCredentials(runDir: string, nodeCount: number): { credentials: HaCredentials; credentialsPath: string } {
  const credentialsPath = path.join(runDir, CREDENTIALS_FILE);
  if (existsSync(credentialsPath)) {
    const kept = JSON.parse(readFileSync(credentialsPath, "utf8")) as Partial<HaCredentials>;
    if (!kept.postgres || !kept.replicator || !kept.etcdRoot)
      throw new ClusterSetupError(`${credentialsPath} lacks a password: remove ${runDir} to make a new HA database.`);
    return { credentials: kept as HaCredentials, credentialsPath };
  }
  const made = [path.join(runDir, "etcd"), ...Array.from({ length: nodeCount }, (_, i) => path.join(runDir, `pg${i + 1}`, "data"))];
  if (made.some((dir) => existsSync(dir)))
    throw new ClusterSetupError(
      `The HA database in ${runDir} has data but no ${CREDENTIALS_FILE} (a version that trusted loopback made it, or the file was removed): remove ${runDir} to make a new one.`,
    );
  const secret = () => randomBytes(24).toString("hex");
  const credentials: HaCredentials = { postgres: secret(), replicator: secret(), etcdRoot: secret() };
  writeFileSync(credentialsPath, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600, flag: "wx" });
  return { credentials, credentialsPath };
}

/**
 * etcd's `root` user with `password`, and authentication on, through etcd's
 * HTTP gateway; a kept etcd that takes the password has it on already.
 */
async function enableEtcdAuth(etcdUrl: string, password: string): Promise<void> {
  const call = async (route: string, body: unknown) => {
    const res = await fetch(`${etcdUrl}/v3/auth/${route}`, {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
      signal: AbortSignal.timeout(5000),
    });
    return { ok: res.ok, text: await res.text() };
  };
  if ((await call("authenticate", { name: "root", password })).ok) return;
  for (const [route, body] of [
    ["user/add", { name: "root", password }],
    ["user/grant", { user: "root", role: "root" }],
    ["enable", {}],
  ] as const) {
    const answer = await call(route, body);
    if (!answer.ok) throw new ClusterSetupError(`etcd on ${etcdUrl} refused auth/${route}: ${answer.text.slice(0, 200)}`);
  }
}

function etcdArgs(ports: HaPorts, dataDir: string): string[] {
  const peer = `http://127.0.0.1:${ports.etcdPeer}`;
  const client = `http://127.0.0.1:${ports.etcd}`;
  return [
    "--name=eo",
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=eo=${peer}`,
    // A page that rebinds its own name to 127.0.0.1 still sends that name: 421. Only etcd's own origin is allowed
    // cross-origin (etcd 3.4 allows any origin by default), so no page elsewhere reads an answer or gets a preflight through.
    "--host-whitelist=127.0.0.1,localhost",
    `--cors=${client}`,
    "--log-level=warn",
  ];
}

type RestCredentials = { username: string; password: string };

/** A Patroni node's configuration (YAML is a superset of JSON, so JSON it is). */
function patroniConfig(
  name: string,
  ports: { pg: number; rest: number },
  etcdPort: number,
  dir: string,
  synchronous: boolean,
  rest: RestCredentials,
  passwords: HaCredentials,
): string {
  const superuser = { username: "postgres", password: passwords.postgres };
  return JSON.stringify(
    {
      scope: SCOPE,
      name,
      // INFO: its decisions (who leads, why a standby is or is not promoted) are in the node's log.
      log: { level: "INFO" },
      // Loopback only, and a page in a browser that posts to it gets nothing done: unsafe methods need the credentials.
      restapi: { listen: `127.0.0.1:${ports.rest}`, connect_address: `127.0.0.1:${ports.rest}`, authentication: rest },
      etcd3: { hosts: `127.0.0.1:${etcdPort}`, username: "root", password: passwords.etcdRoot },
      bootstrap: {
        dcs: {
          ...HA_TIMINGS,
          maximum_lag_on_failover: 1048576,
          synchronous_mode: synchronous,
          postgresql: { use_pg_rewind: true, parameters: { wal_log_hints: "on", max_connections: 100 } },
        },
        initdb: [{ encoding: "UTF8" }, { locale: "C" }],
      },
      postgresql: {
        listen: `127.0.0.1:${ports.pg}`,
        connect_address: `127.0.0.1:${ports.pg}`,
        data_dir: path.join(dir, "data"),
        bin_dir: PG15_BIN_DIR,
        pgpass: path.join(dir, "pgpass"),
        // Loopback only, and a password for everyone (SCRAM): replication as replicator, pg_rewind as postgres.
        pg_hba: ["host replication replicator 127.0.0.1/32 scram-sha-256", "host all all 127.0.0.1/32 scram-sha-256"],
        authentication: {
          superuser,
          replication: { username: "replicator", password: passwords.replicator },
          rewind: superuser,
        },
        // No Unix socket: Patroni talks to its PostgreSQL over TCP, and nothing is left in a shared directory.
        parameters: { unix_socket_directories: "" },
      },
    },
    null,
    2,
  );
}

function node(
  name: string,
  ports: { pg: number; rest: number },
  runDir: string,
  options: HaOptions,
  runAs: PostgresUser | undefined,
  credentials: RestCredentials,
  passwords: HaCredentials,
) {
  const dir = path.join(runDir, name);
  makeOwnedDir(dir, runAs, 0o700);
  const configPath = path.join(dir, "patroni.yml");
  writeFileSync(configPath, patroniConfig(name, ports, options.ports.etcd, dir, options.synchronous, credentials, passwords), {
    mode: 0o600,
  });
  if (runAs) chownSync(configPath, runAs.uid, runAs.gid);
  const patroni = supervised(`Patroni ${name}`, PATRONI_BIN, [configPath], path.join(dir, "patroni.log"), runAs);
  const rest = `http://127.0.0.1:${ports.rest}`;
  const status = async () => (await get(`${rest}/patroni`))?.json as { role?: string; state?: string } | undefined;
  const postmaster = () => {
    try {
      return Number(readFileSync(path.join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0]) || undefined;
    } catch {
      return undefined;
    }
  };
  const killPostmaster = () => {
    const pm = postmaster();
    if (pm) for (const pid of [pm, ...childrenOf(pm)]) signal(pid, "SIGKILL");
  };
  return {
    name,
    pgPort: ports.pg,
    restPort: ports.rest,
    configPath,
    logPath: patroni.logPath,
    role: async (): Promise<HaRole> => {
      const s = await status();
      if (s?.state !== "running") return "down";
      return s.role === "master" || s.role === "primary" ? "leader" : "standby";
    },
    lose: () => {
      // Both at once, so neither sees the other die first and acts on it.
      patroni.kill("SIGKILL");
      killPostmaster();
    },
    killPostgres: killPostmaster,
    start: async () => {
      // Runs until stopped, whatever the node's role; it serves once its REST API says PostgreSQL runs.
      await patroni.start();
      await waitFor(`Patroni ${name}`, patroni, async () => (await status())?.state === "running");
    },
    stop: async () => {
      await patroni.stop();
      // Patroni stops its PostgreSQL on SIGTERM; one it could not (SIGKILLed meanwhile) is stopped here.
      const pm = postmaster();
      if (pm && alive(pm)) {
        signal(pm, "SIGINT");
        for (let i = 0; i < 100 && alive(pm); i++) await new Promise((r) => setTimeout(r, 100));
        if (alive(pm)) killPostmaster();
      }
    },
  };
}

async function leaderOf<N extends { role: () => Promise<HaRole> }>(nodes: N[]): Promise<N | undefined> {
  const roles = await Promise.all(nodes.map((n) => n.role()));
  return nodes[roles.indexOf("leader")];
}

/**
 * The cluster as Patroni's consensus store has it (`GET /cluster`, whose
 * roles come from etcd, the synchronous standby included): one leader
 * running, every other node streaming as the standby it should be, twice in
 * a row a second apart. A standby's REST answer alone is not enough: after a
 * restart Patroni names its synchronous standby in etcd a moment after
 * PostgreSQL reports it, and until then no standby may be promoted.
 */
async function healthyCluster<N extends HaNode>(nodes: N[], synchronous: boolean, timeoutMs: number): Promise<N> {
  const deadline = Date.now() + timeoutMs;
  const standby = synchronous ? "sync_standby" : "replica";
  let seen = "nothing answered";
  let stableFor = 0;
  for (;;) {
    const members = await clusterMembers(nodes);
    if (members) seen = members.map((m) => `${m.name} ${m.role} ${m.state}`).join(", ");
    const leaders = members?.filter((m) => m.role === "leader" && m.state === "running") ?? [];
    const ok =
      members !== undefined &&
      leaders.length === 1 &&
      nodes.every((n) =>
        members.some(
          (m) => m.name === n.name && (m.role === "leader" || (m.role === standby && ["running", "streaming"].includes(m.state))),
        ),
      );
    stableFor = ok ? stableFor + 1 : 0;
    if (stableFor >= 2) return nodes.find((n) => n.name === leaders[0]!.name)!;
    if (Date.now() > deadline) throw new Error(`the HA database was not healthy within ${timeoutMs / 1000} s (${seen})`);
    await new Promise((r) => setTimeout(r, ok ? 1000 : 250));
  }
}

/** Changes Patroni's dynamic configuration (kept in etcd) through any node's REST API. */
async function patchConfig(nodes: HaNode[], credentials: RestCredentials, change: Record<string, unknown>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const headers = {
    "content-type": "application/json",
    authorization: `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64")}`,
  };
  for (;;) {
    for (const n of nodes) {
      const res = await fetch(`http://127.0.0.1:${n.restPort}/config`, {
        method: "PATCH",
        body: JSON.stringify(change),
        headers,
        signal: AbortSignal.timeout(5000),
      }).catch(() => undefined);
      if (res?.ok) return;
    }
    if (Date.now() > deadline) throw new Error(`no Patroni took the configuration change ${JSON.stringify(change)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

type Member = { name: string; role: string; state: string };

/** The members as any running node's Patroni reports them. */
async function clusterMembers(nodes: HaNode[]): Promise<Member[] | undefined> {
  for (const n of nodes) {
    const answer = await get(`http://127.0.0.1:${n.restPort}/cluster`);
    const members = (answer?.json as { members?: Member[] } | undefined)?.members;
    if (answer?.status === 200 && members) return members;
  }
  return undefined;
}

/** A long-running process in a group of its own (as the postgres user when we are root), its output appended to `logPath`. */
export function supervised(what: string, bin: string, args: string[], logPath: string, runAs: PostgresUser | undefined) {
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  const kill = (s: NodeJS.Signals) => {
    if (running() && child?.pid) signal(-child.pid, s);
  };
  return {
    logPath,
    running,
    kill,
    start: async () => {
      // A process just killed is waited for: its ports and files are free only once it is gone.
      await exited;
      if (running()) throw new Error(`${what} runs already`);
      const out = openSync(logPath, "a", 0o600);
      const current = spawn(bin, args, {
        detached: true,
        stdio: ["ignore", out, out],
        // Not our environment: the app's secrets have no business in the database's processes.
        env: { PATH: process.env.PATH, LANG: "C.UTF-8", HOME: path.dirname(logPath), NODE_ENV: process.env.NODE_ENV },
        // Its own folder, not ours: a clone in a 0700 folder is closed to the postgres user, and Patroni's worker
        // processes chdir to where their parent started (a PermissionError: the node never bootstraps).
        cwd: path.dirname(logPath),
        ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
      });
      closeSync(out);
      child = current;
      exited = new Promise((resolve) => current.once("exit", () => resolve()));
    },
    stop: async () => {
      if (!running()) return;
      kill("SIGTERM");
      const timer = setTimeout(() => kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function waitFor(what: string, process: ReturnType<typeof supervised>, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (!process.running())
      throw new ClusterSetupError(`${what} exited at start-up: ${lastLines(process.logPath)} (log: ${process.logPath})`);
    if (await ready()) return;
    if (Date.now() > deadline)
      throw new ClusterSetupError(`${what} was not ready within ${READY_TIMEOUT_MS / 1000} s (log: ${process.logPath})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function get(url: string): Promise<{ status: number; json: unknown } | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, json };
  } catch {
    return undefined;
  }
}

function signal(pid: number, s: NodeJS.Signals): void {
  try {
    process.kill(pid, s);
  } catch {
    // Gone already.
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The processes whose parent is `pid` (a postmaster's backends and workers, each in a group of its own). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) children.push(Number(entry));
    } catch {
      // It ended while we looked.
    }
  }
  return children;
}
