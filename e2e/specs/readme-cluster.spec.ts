/**
 * The cluster walkthrough (docs/OPERATIONS.md), run as written: `npm run cluster`'s
 * command brings up HAProxy, two instances, PgBouncer and the stand-in on a
 * fresh database, and the `bash` block under "## Run it as a cluster" runs
 * with `set -euo pipefail` against it. The one change made to the text is
 * HAProxy's address (a free port instead of 8080); the instances, PgBouncer
 * and the stand-in get free ports through the command's own flags. Then
 * SIGTERM must stop all of it.
 *
 * The same block runs a second time against `npm run cluster -- --ha` (the
 * HA database: Patroni, two PostgreSQL 15 nodes, etcd, HAProxy's PostgreSQL
 * side), where `patronictl` must list a leader and a synchronous standby.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { request } from "node:http";
import path from "node:path";
import { createServer } from "node:net";
import { expect, test } from "@playwright/test";
import postgres from "postgres";
import { scratchClusterParent } from "../../db/cluster-home";
import { createFreshDatabase, freePort, type FreshDatabase } from "../../tests/support/database";
import { exited, readmeBlock, root, runScript } from "../support/walkthrough";

const listenable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });

/** `--instance-port P` puts the instances on P, P+1: `count` free ports in a row. */
async function freePortsInARow(count = 2): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port + count - 1 > 65535) continue;
    let free = true;
    for (let i = 1; i < count && free; i++) free = await listenable(port + i);
    if (free) return port;
  }
}

/** `npm run cluster`'s command with `args`, in a process group of its own; `up()` resolves once it says it is up. */
function spawnCluster(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/cluster.ts", ...args], {
    cwd: root,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env,
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const log = () => output;
  const up = () =>
    expect
      .poll(() => (child.exitCode === null ? output : `exited ${child.exitCode}: ${output}`), { timeout: 180_000 })
      .toContain("The cluster is up");
  return { child, log, up };
}

const CLUSTER_DOC = "docs/OPERATIONS.md";

test.skip(
  !existsSync("/usr/sbin/haproxy") || !existsSync("/usr/sbin/pgbouncer"),
  "needs Debian's haproxy and pgbouncer: apt-get install -y haproxy pgbouncer",
);

test("the cluster walkthrough runs as written", async () => {
  // A fresh database, the build (the e2e run's), two instances, PgBouncer and HAProxy on a loaded machine.
  test.setTimeout(240_000);
  const script = readmeBlock("Run it as a cluster", CLUSTER_DOC);
  expect(script).toContain("localhost:8080");

  let database: FreshDatabase | undefined;
  let cluster: ChildProcess | undefined;
  let log = () => "";
  try {
    database = await createFreshDatabase("readme_cluster");
    const [port, poolerPort, pspPort, instancePort] = [await freePort(), await freePort(), await freePort(), await freePortsInARow()];
    const env = { ...process.env, DATABASE_URL: database.url, PSP_PORT: String(pspPort), LOG_LEVEL: "warn" };
    const started = spawnCluster(
      ["--port", String(port), "--instance-port", String(instancePort), "--pooler-port", String(poolerPort)],
      env,
    );
    cluster = started.child;
    await started.up();
    log = started.log;

    // The CLIs reach the same primary and stand-in as the cluster.
    const { code, out } = await runScript(script.replaceAll("localhost:8080", `127.0.0.1:${port}`), {
      ...env,
      PSP_URL: `http://127.0.0.1:${pspPort}`,
    });
    expect(code, out).toBe(0);

    expect(out).toContain('{"status":"ok","database":"up"}');
    expect((out.match(/HTTP\/1\.1 201/g) ?? []).length, out).toBe(2);
    expect(out).toMatch(/^idempotent-replayed: true/im);
    // HAProxy logged both requests with the key, each answered by an instance with 201 (the
    // first grep line follows curl's last body, which has no closing newline).
    expect((out.match(/EO\tPOST\t\/api\/v1\/payments\t201\t\d+\tapp\d\t/g) ?? []).length, out).toBe(2);
    expect(out).toMatch(/^Reconciled: the ledger matches the provider's 1 charges/m);

    process.kill(-cluster.pid!, "SIGTERM");
    expect(await exited(cluster), log()).toBe(0);
    expect(log()).toContain("cluster: stopped");
    // Nothing it started still listens.
    for (const p of [port, poolerPort, pspPort, instancePort, instancePort + 1]) expect(await listenable(p), `port ${p}`).toBe(true);
  } finally {
    if (cluster?.pid !== undefined && cluster.exitCode === null) {
      process.kill(-cluster.pid, "SIGTERM");
      await exited(cluster);
    }
    await database?.dispose();
  }
});

/** Resolves once `server` answers its health, or throws once it has exited. */
async function healthy(url: string, server: ChildProcess): Promise<void> {
  await expect
    .poll(
      async () =>
        server.exitCode !== null
          ? `exited ${server.exitCode}`
          : (await fetch(`${url}/api/health`).then(
                (r) => r.ok,
                () => false,
              ))
            ? "up"
            : "down",
      { timeout: 180_000 },
    )
    .toBe("up");
}

test("in order on the checkout's embedded database: the README's API walkthrough under npm start, then the cluster's, reconcile clean each time", async () => {
  // Two start-ups of the build and an embedded cluster of its own on a loaded machine.
  test.setTimeout(300_000);
  const dir = scratchClusterParent("readme-order");
  let server: ChildProcess | undefined;
  let cluster: ChildProcess | undefined;
  let log = () => "";
  try {
    const [appPort, pgPort, pspPort, port, poolerPort, instancePort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
      await freePortsInARow(),
    ];
    // As a fresh checkout has it: no DATABASE_URL, the embedded cluster (here a scratch one) and its stand-in's file beside it.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      EMBEDDED_PG_DIR: path.join(dir, "pg"),
      EMBEDDED_PG_PORT: String(pgPort),
      PSP_PORT: String(pspPort),
      LOG_LEVEL: "warn",
    };
    delete env.DATABASE_URL;
    delete env.PSP_URL;

    server = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      cwd: root,
      detached: true,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...env, PORT: String(appPort) },
    });
    await healthy(`http://127.0.0.1:${appPort}`, server);
    const first = await runScript(readmeBlock("Try the API"), { ...env, PORT: String(appPort) });
    expect(first.code, first.out).toBe(0);
    expect(first.out).toMatch(/^Reconciled: the ledger matches the provider's 1 charges/m);
    process.kill(-server.pid!, "SIGTERM");
    expect(await exited(server)).toBe(0);

    const started = spawnCluster(
      ["--port", String(port), "--instance-port", String(instancePort), "--pooler-port", String(poolerPort)],
      env,
    );
    cluster = started.child;
    await started.up();
    log = started.log;
    const second = await runScript(readmeBlock("Run it as a cluster", CLUSTER_DOC).replaceAll("localhost:8080", `127.0.0.1:${port}`), env);
    expect(second.code, second.out).toBe(0);
    // npm start's charge is known to the cluster's stand-in too: nothing shows as missing_charge.
    expect(second.out).toMatch(/^Reconciled: the ledger matches the provider's 2 charges/m);
    process.kill(-cluster.pid!, "SIGTERM");
    expect(await exited(cluster), log()).toBe(0);
  } finally {
    for (const child of [server, cluster]) {
      if (child?.pid !== undefined && child.exitCode === null) {
        process.kill(-child.pid, "SIGTERM");
        await exited(child);
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

test.describe("with --ha", () => {
  test.skip(
    !existsSync("/usr/bin/patroni") || !existsSync("/usr/bin/etcd"),
    "needs Debian's patroni and etcd-server: apt-get install -y patroni etcd-server",
  );

  test("the same walkthrough on the HA database; patronictl lists a leader and a synchronous standby", async () => {
    test.setTimeout(240_000);
    const script = readmeBlock("Run it as a cluster", CLUSTER_DOC);
    const haDir = scratchClusterParent("readme-ha");
    let cluster: ChildProcess | undefined;
    let log = () => "";
    try {
      const [port, poolerPort, pspPort, instancePort, haPort] = [
        await freePort(),
        await freePort(),
        await freePort(),
        await freePortsInARow(),
        await freePortsInARow(8),
      ];
      // The HA database is the cluster's own: no DATABASE_URL (refused with --ha), and the CLIs find it through the run file.
      const env: NodeJS.ProcessEnv = { ...process.env, PSP_PORT: String(pspPort), LOG_LEVEL: "warn" };
      delete env.DATABASE_URL;
      delete env.EMBEDDED_PG_DIR;
      const args = [
        "--port",
        String(port),
        "--instance-port",
        String(instancePort),
        "--pooler-port",
        String(poolerPort),
        "--ha",
        "--ha-port",
        String(haPort),
        "--ha-dir",
        path.join(haDir, "ha"),
      ];
      const started = spawnCluster(args, env);
      cluster = started.child;
      await started.up();
      log = started.log;
      expect(log()).toContain(`PostgreSQL       127.0.0.1:${haPort} (HAProxy: the primary`);
      expect(log()).toMatch(/synchronous_mode, ttl 10 s/);

      const { code, out } = await runScript(script.replaceAll("localhost:8080", `127.0.0.1:${port}`), {
        ...env,
        PSP_URL: `http://127.0.0.1:${pspPort}`,
      });
      expect(code, out).toBe(0);
      expect((out.match(/HTTP\/1\.1 201/g) ?? []).length, out).toBe(2);
      expect(out).toMatch(/^idempotent-replayed: true/im);
      expect(out).toMatch(/^Reconciled: the ledger matches the provider's 1 charges/m);

      const config = log().match(/patronictl -c (\S+) list/)?.[1];
      expect(config, log()).toBeDefined();
      const members = JSON.parse(
        execFileSync("patronictl", ["-c", path.resolve(root, config!), "list", "-f", "json"], { encoding: "utf8" }),
      ) as { Member: string; Role: string; State: string }[];
      expect(members.map((m) => m.Role).sort()).toEqual(["Leader", "Sync Standby"]);
      // Patroni's unsafe calls need the run's credentials: a page that posts to loopback gets no failover or restart.
      for (const [method, where] of [
        ["POST", "/failover"],
        ["POST", "/restart"],
        ["PATCH", "/config"],
      ] as const) {
        const res = await fetch(`http://127.0.0.1:${haPort + 4}${where}`, {
          method,
          headers: { "content-type": "text/plain" },
          body: '{"candidate":"pg2","ttl":30}',
        });
        expect(res.status, `${method} ${where}`).toBe(401);
      }
      // The passwords the banner names, made with this HA database (0600).
      const credentialsPath = log().match(/passwords +(\S+) /)?.[1];
      expect(credentialsPath, log()).toBeDefined();
      const file = path.resolve(root, credentialsPath!);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const credentials = JSON.parse(readFileSync(file, "utf8")) as { postgres: string; etcdRoot: string };

      // No port of the HA database lets a password-less postgres in (no trust line): HAProxy's two routes, each node, PgBouncer.
      for (const p of [haPort, haPort + 1, haPort + 2, haPort + 3, poolerPort]) {
        const open = postgres(`postgres://postgres@127.0.0.1:${p}/postgres`, { max: 1, onnotice: () => {}, connect_timeout: 5 });
        await expect(open`select 1`, `port ${p}`).rejects.toThrow();
        await open.end({ timeout: 1 });
      }

      // etcd: nothing for a client without the root password, a foreign Host, or another origin's preflight.
      const etcd = `http://127.0.0.1:${haPort + 6}`;
      const range = (headers: Record<string, string>) =>
        fetch(`${etcd}/v3/kv/range`, {
          method: "POST",
          headers,
          body: JSON.stringify({ key: btoa("/service/"), range_end: btoa("/service0") }),
        });
      const anonymous = await range({ "content-type": "text/plain" });
      expect(await anonymous.text()).toMatch(/user name is empty/);
      expect(anonymous.ok).toBe(false);
      // fetch cannot send another Host: node:http can.
      const rebound = await new Promise<number | undefined>((resolve, reject) =>
        request(`${etcd}/v3/kv/range`, { method: "POST", headers: { host: `rebind.attacker.example:${haPort + 6}` } }, (res) => {
          res.resume();
          resolve(res.statusCode);
        })
          .on("error", reject)
          .end("{}"),
      );
      expect(rebound).toBe(421);
      const preflight = await fetch(`${etcd}/v3/kv/range`, {
        method: "OPTIONS",
        headers: { origin: "http://attacker.example", "access-control-request-method": "POST" },
      });
      expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
      const token = (
        (await (
          await fetch(`${etcd}/v3/auth/authenticate`, {
            method: "POST",
            body: JSON.stringify({ name: "root", password: credentials.etcdRoot }),
          })
        ).json()) as { token: string }
      ).token;
      const keys = (await (await range({ authorization: token })).json()) as { count?: string };
      expect(Number(keys.count), "Patroni's keys, read with the root password").toBeGreaterThan(0);

      // HAProxy's two routes: the primary, and the standby the admin's overview reads (DATABASE_REPLICA_URL).
      for (const [route, recovering] of [
        [haPort, false],
        [haPort + 1, true],
      ] as const) {
        const sql = postgres(`postgres://postgres:${credentials.postgres}@127.0.0.1:${route}/postgres`, { max: 1, onnotice: () => {} });
        const [row] = await sql<{ standby: boolean }[]>`select pg_is_in_recovery() as standby`;
        await sql.end({ timeout: 5 });
        expect(row!.standby, `port ${route}`).toBe(recovering);
      }

      process.kill(-cluster.pid!, "SIGTERM");
      expect(await exited(cluster), log()).toBe(0);
      expect(log()).toContain("cluster: stopped");
      for (const p of [port, poolerPort, pspPort, instancePort, instancePort + 1, ...Array.from({ length: 8 }, (_, i) => haPort + i)]) {
        expect(await listenable(p), `port ${p}`).toBe(true);
      }
    } finally {
      if (cluster?.pid !== undefined && cluster.exitCode === null) {
        process.kill(-cluster.pid, "SIGTERM");
        await exited(cluster);
      }
      rmSync(haDir, { recursive: true, force: true });
    }
  });
});
