/**
 * npm run test:contract — the OpenAPI document against the running API, by
 * tools a client's team would use, none written here:
 *
 * 1. `redocly lint` (recommended rules, no warning) on the document the app serves;
 * 2. Prism (`@stoplight/prism-cli`) as a validating proxy in front of the app,
 *    every operation sent through it with scripts/contract/traffic.ts;
 * 3. Portman's contract tests generated from the document (status, content
 *    type, JSON schema, declared headers) with chained data, run by Newman;
 * 4. a client generated with openapi-typescript, type-checked against the
 *    answers the traffic got (scripts/contract/client-check.ts).
 *
 * The app runs as `npm start` would, on a fresh database with the provider's
 * stand-in, on loopback ports 3261–3264. Every process started here is
 * stopped on exit, on an error and on Ctrl-C. Exit 0 only when all pass.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { projectRoot, stateDir } from "../../db/cluster-home";
import * as schema from "../../db/schema";
import { createTenant } from "../../server/tenants/service";
import { createFreshDatabase, type FreshDatabase } from "../../tests/support/database";
import { checkClient } from "./client-check";
import { runPortman } from "./portman";
import { bin, isStopping, run, start, stopAll, waitFor } from "./processes";
import { runTraffic } from "./traffic";

const PORTS = { app: 3261, psp: 3262, strict: 3263, lenient: 3264 };
const OUT = path.join(stateDir, "contract");
const WEBHOOK_SECRET = "whsec_contract_only";
const say = (line: string) => process.stdout.write(`contract: ${line}\n`);

async function tenantToken(url: string): Promise<string> {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return (await createTenant(drizzle({ client, schema }), "contract")).token;
  } finally {
    await client.end({ timeout: 5 });
  }
}

async function prism(port: number, errors: boolean, document: string) {
  const args = [
    "proxy",
    document,
    `http://127.0.0.1:${PORTS.app}/api`,
    "-h",
    "127.0.0.1",
    "-p",
    String(port),
    ...(errors ? ["--errors"] : []),
  ];
  const child = start(bin("prism"), args, { cwd: projectRoot, stdio: ["ignore", "ignore", "inherit"] });
  await waitFor(`http://127.0.0.1:${port}/health`, child, 60_000);
}

async function main(): Promise<number> {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const results: Record<string, string> = {};
  let database: FreshDatabase | undefined;
  try {
    database = await createFreshDatabase("contract");
    const token = await tenantToken(database.url);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOST: "127.0.0.1",
      PORT: String(PORTS.app),
      PSP_PORT: String(PORTS.psp),
      DATABASE_URL: database.url,
      PSP_WEBHOOK_SECRET: WEBHOOK_SECRET,
      // Slower than the bounded wait for a key in flight (10 s), so the traffic meets a 409.
      PSP_SLOW_MS: "14000",
      ADMIN_PASSWORD: "a contract-run admin password",
      DEMO_MODE: "false",
      LOG_LEVEL: "warn",
    };
    delete env.PSP_URL;
    const app = start(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      cwd: projectRoot,
      stdio: ["ignore", "inherit", "inherit"],
      env,
    });
    const appUrl = `http://127.0.0.1:${PORTS.app}`;
    await waitFor(`${appUrl}/api/health`, app);
    const documentPath = path.join(OUT, "openapi.json");
    writeFileSync(documentPath, await (await fetch(`${appUrl}/api/openapi.json`)).text());
    say(`the app serves on ${appUrl}; its document is in ${path.relative(projectRoot, documentPath)}`);

    const lint = await run(
      bin("redocly"),
      ["lint", documentPath, "--config", path.join(projectRoot, "redocly.yaml"), "--max-problems", "200"],
      { cwd: projectRoot },
    );
    results.redocly = lint === 0 ? "passed" : `failed (exit ${lint})`;

    await prism(PORTS.strict, true, documentPath);
    await prism(PORTS.lenient, false, documentPath);
    const traffic = await runTraffic({
      document: JSON.parse(readFileSync(documentPath, "utf8")) as Parameters<typeof runTraffic>[0]["document"],
      strict: `http://127.0.0.1:${PORTS.strict}`,
      lenient: `http://127.0.0.1:${PORTS.lenient}`,
      direct: `${appUrl}/api`,
      token,
      webhookSecret: WEBHOOK_SECRET,
      log: (line) => say(`prism ${line}`),
    });
    for (const failure of traffic.failures) say(`prism FAIL ${failure}`);
    say(
      `prism: ${traffic.requests} requests, ${traffic.violations} violations, ${traffic.refused} malformed requests refused by the document as by the API, ${traffic.failures.length} failures`,
    );
    results.prism =
      traffic.failures.length === 0
        ? `passed (${traffic.requests} requests, ${traffic.violations} violations)`
        : `failed (${traffic.failures.length} failures)`;

    const portman = await runPortman({
      document: documentPath,
      baseUrl: `${appUrl}/api`,
      token,
      webhookSecret: WEBHOOK_SECRET,
      out: OUT,
      log: say,
    });
    results.portman =
      portman.failed === 0 && portman.assertions > 0
        ? `passed (${portman.requests} requests, ${portman.assertions} assertions, 0 failed)`
        : `failed (${portman.failed} of ${portman.assertions} assertions)`;

    const client = await checkClient({ document: documentPath, answers: traffic.answers, out: OUT, log: say });
    results.client = client.ok ? `passed (${client.answers} answers type-checked)` : "failed";
  } finally {
    await stopAll();
    await database?.dispose();
  }
  if (isStopping()) return 130;
  say(
    Object.entries(results)
      .map(([tool, r]) => `${tool}: ${r}`)
      .join("; "),
  );
  return Object.keys(results).length === 4 && Object.values(results).every((r) => r.startsWith("passed")) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`contract: ${error instanceof Error ? error.message : String(error)}\n`);
    void stopAll().then(() => process.exit(1));
  },
);
