/**
 * npm run test:conformance — this app against its own conformance kit
 * (packages/exactly-once-check), the binary as anyone would run it:
 *
 * 1. the run command (`scripts/start.ts`, as `npm start`) on a fresh database
 *    (with DATABASE_URL: a new database on that server, dropped afterwards),
 *    checked over REST (`/api/v1/payments`, the payments list as
 *    --count-url) and over tRPC (`payments.create` with --trpc);
 * 2. `npm run cluster`'s topology (HAProxy, two instances, PgBouncer) on the
 *    same database, checked through HAProxy.
 *
 * Every check must pass, scope (a second tenant) and expiry (a 3 s key TTL)
 * included, under the exactly-once profile; over REST the core, ietf and
 * stripe profiles run too (`--fail-on unsafe`: their deviations in form are
 * expected, an unsafe finding is not), for docs/CONFORMANCE.md. Ports
 * 3241–3247 only (this task's range), loopback only. JUnit and JSON reports
 * land in .data/conformance/. Exit 0 only when every run passes.
 */
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { projectRoot, scratchClusterParent, stateDir } from "../db/cluster-home";
import * as schema from "../db/schema";
import { createTenant } from "../server/tenants/service";
import { createFreshDatabase, type FreshDatabase } from "../tests/support/database";
import { startCluster, type Cluster } from "./cluster/topology";
import { bin, isStopping, run, start, stopAll, waitFor } from "./contract/processes";

const PORTS = { app: 3241, appPsp: 3242, haproxy: 3243, instances: [3244, 3245], pooler: 3246, clusterPsp: 3247 };
const TTL_S = 3;
const OTHER_PROFILES = ["core", "ietf", "stripe"] as const;
const PAYMENT = '{"amount":"1.00","currency":"EUR","destination":"acct_test_123"}';
const REPORTS = path.join(stateDir, "conformance");
/** Keys expire after TTL_S; the lease and the completer stay as deployed. */
const APP_ENV = { IDEMPOTENCY_TTL_MS: String(TTL_S * 1000), LOG_LEVEL: "warn" };

const say = (line: string) => process.stdout.write(`conformance: ${line}\n`);

async function tenants(url: string, names: string[]): Promise<string[]> {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const db = drizzle({ client, schema });
    const tokens: string[] = [];
    for (const name of names) tokens.push((await createTenant(db, name)).token);
    return tokens;
  } finally {
    await client.end({ timeout: 5 });
  }
}

/** The binary, as CI would call it; its table goes to this process's output. */
function kit(name: string, args: string[]): Promise<number> {
  say(`${name}: exactly-once-check ${args.map((a) => (a.includes("Bearer ") ? a.replace(/Bearer \S+/, "Bearer …") : a)).join(" ")}`);
  const reports = ["--junit", path.join(REPORTS, `${name}.xml`), "--json", path.join(REPORTS, `${name}.json`)];
  return run(bin("exactly-once-check"), [...args, ...reports]);
}

function kitArgs(url: string, countBase: string, token: string, other: string, profile = "exactly-once"): string[] {
  // This app's own contract is the strictest profile; the others are run for the published matrix (docs/CONFORMANCE.md).
  return [
    url,
    "--profile",
    profile,
    "--data",
    PAYMENT,
    "-H",
    `Authorization: Bearer ${token}`,
    "--other-header",
    `Authorization: Bearer ${other}`,
    "--count-url",
    `${countBase}/api/v1/payments?limit=100`,
    "--ttl",
    String(TTL_S),
  ];
}

async function main(): Promise<number> {
  rmSync(REPORTS, { recursive: true, force: true });
  mkdirSync(REPORTS, { recursive: true });
  let database: FreshDatabase | undefined;
  let cluster: Cluster | undefined;
  const runDir = scratchClusterParent("conformance");
  const codes: Record<string, number> = {};
  try {
    database = await createFreshDatabase("conformance");
    const [rest, trpc, viaProxy, other] = await tenants(database.url, [
      "conformance-rest",
      "conformance-trpc",
      "conformance-cluster",
      "conformance-other",
    ]);
    // A stand-in of its own on this range's port, never one another run left on PSP_URL.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...APP_ENV,
      HOST: "127.0.0.1",
      PORT: String(PORTS.app),
      DATABASE_URL: database.url,
      PSP_PORT: String(PORTS.appPsp),
    };
    delete env.PSP_URL;
    // Its own group (stopped whole): the run command, the Next.js server and a build still running.
    const app = start(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      cwd: projectRoot,
      stdio: ["ignore", "inherit", "inherit"],
      env,
    });
    const appUrl = `http://127.0.0.1:${PORTS.app}`;
    await waitFor(`${appUrl}/api/health`, app);
    say(`the app serves on ${appUrl}`);
    codes.rest = await kit("rest", kitArgs(`${appUrl}/api/v1/payments`, appUrl, rest!, other!));
    codes.trpc = await kit("trpc", [...kitArgs(`${appUrl}/api/trpc/payments.create`, appUrl, trpc!, other!), "--trpc"]);
    // The other profiles hold the app to others' conventions: their deviations are expected, an unsafe finding is not.
    for (const profile of OTHER_PROFILES)
      codes[`rest-${profile}`] = await kit(`rest-${profile}`, [
        ...kitArgs(`${appUrl}/api/v1/payments`, appUrl, rest!, other!, profile),
        "--fail-on",
        "unsafe",
      ]);
    await stopAll();
    if (isStopping()) return 130;

    cluster = await startCluster({
      primaryUrl: database.url,
      instancePorts: PORTS.instances,
      port: PORTS.haproxy,
      poolerPort: PORTS.pooler,
      pspPort: PORTS.clusterPsp,
      runDir,
      pspWebhookSecret: "whsec_conformance_only",
      instanceEnv: { ...APP_ENV, ADMIN_PASSWORD: "a conformance admin password", DEMO_MODE: "false" },
      onLog: (line) => say(`cluster: ${line}`),
    });
    say(`the cluster serves through HAProxy on ${cluster.url}`);
    codes.cluster = await kit("cluster", kitArgs(`${cluster.url}/api/v1/payments`, cluster.url, viaProxy!, other!));
  } finally {
    await stopAll();
    await cluster?.stop();
    await database?.dispose();
    rmSync(runDir, { recursive: true, force: true });
  }
  const failed = Object.entries(codes).filter(([, c]) => c !== 0);
  say(
    `${Object.entries(codes)
      .map(([k, c]) => `${k}: exit ${c}`)
      .join(", ")}; JUnit in ${path.relative(projectRoot, REPORTS)}/`,
  );
  return failed.length === 0 && Object.keys(codes).length === 3 + OTHER_PROFILES.length ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`conformance: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
