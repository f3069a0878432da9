/**
 * Issue 25: `npm run reconcile` stays clean across a restart. The run command
 * serves a payment over the REST API and a failure-lab run (the protected
 * checkout once, the unprotected twin twice); then it stops, and with it the
 * provider stand-in, and starts again. The stand-in has kept its charges, so
 * reconcile, run as a user runs it, finds the ledger and the provider in
 * agreement, and says how many lab payments it left out.
 */
import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { beforeAll, expect, it } from "vitest";
import { scratchClusterParent } from "../../db/cluster-home";
import { freePort } from "../../db/embedded";
import { LAB_RUN_HEADER, SHOP_TEST_DESTINATION } from "../../server/lab/scenarios";
import { ensureBuild, health, spawnServer, waitFor, type Server } from "./support";

beforeAll(() => ensureBuild(() => undefined), 600_000);

const RUN_COMMAND = [process.execPath, "--import", "tsx", "scripts/start.ts"];
const run = promisify(execFile);

async function trpc<T>(
  server: Server,
  procedure: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; data: T }> {
  const response = await fetch(`${server.url}/api/trpc/${procedure}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as { result?: { data: T } };
  return { status: response.status, data: json.result?.data as T };
}

it("reconcile is clean after the stand-in restarts between a payment and the reconcile, and counts the lab's payments apart", async () => {
  const parent = scratchClusterParent("reconcile-restart");
  const dir = path.join(parent, "pg");
  const [port, pspPort] = await Promise.all([freePort(), freePort()]);
  // Demo mode (the run command's demo secrets) for the lab and its seeded tenant.
  const env = {
    DATABASE_URL: undefined,
    PSP_URL: undefined,
    ADMIN_PASSWORD: undefined,
    PSP_WEBHOOK_SECRET: undefined,
    SEED_DEMO: undefined,
    EMBEDDED_PG_DIR: dir,
    PSP_PORT: String(pspPort),
    PORT: String(port),
  };
  const cliEnv: NodeJS.ProcessEnv = { ...process.env, EMBEDDED_PG_DIR: dir, LOG_LEVEL: "silent" };
  for (const name of ["DATABASE_URL", "PSP_URL", "PSP_PORT", "EMBEDDED_PG_PORT"]) delete cliEnv[name];
  let server = await spawnServer(env, RUN_COMMAND);
  try {
    await waitFor("the run to serve", async () => ((await health(server)).status === 200 ? true : undefined));
    const token = (
      await run(process.execPath, ["--import", "tsx", "scripts/tenant.ts", "create", "Restart"], { env: cliEnv })
    ).stdout.trim();
    const paid = await fetch(`${server.url}/api/v1/payments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": crypto.randomUUID() },
      body: JSON.stringify({ amount: "25.00", currency: "EUR", destination: "acct_test_123" }),
    });
    expect(paid.status).toBe(201);

    const cart = { items: [{ sku: "mug-once", quantity: 1 }], destination: SHOP_TEST_DESTINATION };
    const guarded = await trpc<{ runId: string; key: string }>(server, "lab.start", { scenario: "double-click", target: "protected" });
    expect(
      (await trpc(server, "checkout.pay", cart, { [LAB_RUN_HEADER]: guarded.data.runId, "idempotency-key": guarded.data.key })).status,
    ).toBe(200);
    const twin = await trpc<{ runId: string }>(server, "lab.start", { scenario: "double-click", target: "naive" });
    for (let i = 0; i < 2; i++) expect((await trpc(server, "lab.naivePay", cart, { [LAB_RUN_HEADER]: twin.data.runId })).status).toBe(200);

    // The stand-in stops with the server, and a new one starts with the next run.
    expect(await server.stop()).toBe(0);
    server = await spawnServer(env, RUN_COMMAND);
    await waitFor("the restarted run to serve", async () => ((await health(server)).status === 200 ? true : undefined));

    const reconciled = await run(process.execPath, ["--import", "tsx", "scripts/reconcile.ts"], { env: cliEnv }).catch(
      (error: { stdout: string }) => ({ stdout: error.stdout }),
    );
    expect(reconciled.stdout).toBe(
      "Reconciled: the ledger matches the provider's 1 charges. Left out: 3 payment(s) and 3 charge(s) of the failure lab (/lab), whose unprotected twin double-charges on purpose.\n",
    );
    expect(await server.stop()).toBe(0);
  } finally {
    await server.stop();
    rmSync(parent, { recursive: true, force: true });
  }
  // Two start-ups of the run command (cluster, stand-in, migrations) and three CLI runs: more than the default minute under load.
}, 240_000);
