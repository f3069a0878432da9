/**
 * Issue 54: two servers on one machine, each as a user starts a second one:
 * `npm start` with another PORT and another database (EMBEDDED_PG_DIR), and
 * PSP_PORT left unset, so both ask for the stand-in's default port. Each
 * must run a stand-in of its own (the second, or both when something else
 * holds 4010, on a free port its ready line names), a payment on each must
 * land at its own stand-in only, and each server's `npm run reconcile`,
 * with no variables but its cluster's directory, must be clean. A third
 * start that names the first one's stand-in port in PSP_PORT must refuse in
 * one line instead of serving on it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import path from "node:path";
import { expect, test, type Page } from "@playwright/test";
import postgres from "postgres";
import { scratchClusterParent } from "../../db/cluster-home";
import { runningServer, type RunFile } from "../../db/run-file";
import { DEFAULT_PSP_PORT } from "../../server/env-schema";
import { freePort } from "../../tests/support/database";
import { exited, root, runScript } from "../support/walkthrough";

type Run = { child: ChildProcess; base: string; dir: string; output: () => string };

/** The environment of a user's shell on this checkout: demo mode, no database or provider settings, the cluster in `dir`. */
function userEnv(dir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, EMBEDDED_PG_DIR: dir, LOG_LEVEL: "warn" };
  for (const name of ["DATABASE_URL", "PSP_URL", "PSP_PORT", "EMBEDDED_PG_PORT", "ADMIN_PASSWORD", "DEMO_MODE", "PORT"]) delete env[name];
  return env;
}

async function startRun(dir: string, extra: Record<string, string> = {}): Promise<Run> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    cwd: root,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...userEnv(dir), PORT: String(port), EMBEDDED_PG_PORT: String(await freePort()), ...extra },
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return { child, base: `http://127.0.0.1:${port}`, dir, output: () => output };
}

async function ready(run: Run): Promise<string> {
  await expect
    .poll(() => (run.child.exitCode === null ? run.output() : `exited ${run.child.exitCode}: ${run.output()}`), {
      timeout: 180_000,
      message: `${run.base} never said it was ready`,
    })
    .toMatch(/^Ready on /m);
  return run.output().match(/^Ready on .*$/m)![0];
}

async function stopRun(run: Run | undefined): Promise<void> {
  if (run?.child.pid === undefined || run.child.exitCode !== null || run.child.signalCode !== null) return;
  process.kill(-run.child.pid, "SIGTERM");
  await exited(run.child);
}

/** The server's run file: the database and the stand-in it uses, as the CLIs find them. */
const runFileOf = (run: Run): RunFile => {
  const found = runningServer((r) => r.embeddedDir === run.dir);
  if (!found) throw new Error(`no run file for the server on ${run.dir}`);
  return found;
};

async function pay(page: Page, run: Run): Promise<void> {
  await page.goto(`${run.base}/checkout`);
  await page
    .getByRole("button", { name: /^Add .* to cart$/ })
    .first()
    .click({ timeout: 30_000 });
  await page.getByRole("button", { name: /^Pay / }).click();
  await expect(page.getByRole("heading", { name: "Order confirmed" })).toBeVisible({ timeout: 30_000 });
}

async function chargeIdsAt(pspUrl: string): Promise<string[]> {
  const listed = (await (await fetch(`${pspUrl}/charges`)).json()) as { data: { id: string }[] };
  return listed.data.map((c) => c.id).sort();
}

async function paymentChargeIds(databaseUrl: string): Promise<string[]> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
  try {
    const rows = await sql<{ id: string }[]>`select psp_charge_id as id from payments where psp_charge_id is not null`;
    return rows.map((r) => r.id).sort();
  } finally {
    await sql.end({ timeout: 5 });
  }
}

test("two servers on one machine: each has its own stand-in, and each reconciles clean", async ({ page }) => {
  // Two embedded clusters, two servers and a third start on two loaded cores.
  test.setTimeout(480_000);
  const parent = scratchClusterParent("two-servers");
  const [first, second] = [path.join(parent, "pg"), path.join(parent, "pg2")];
  const runs: Run[] = [];
  try {
    // One after the other, as a user would: the first is serving when the second asks for the same stand-in port.
    runs.push(await startRun(first));
    const readyLines = [await ready(runs[0]!)];
    runs.push(await startRun(second));
    readyLines.push(await ready(runs[1]!));

    const files = runs.map(runFileOf);
    expect(files[0]!.pspUrl).not.toBe(files[1]!.pspUrl);
    files.forEach((file, i) => {
      // A stand-in that is not on the default port is named where the user looks: the ready line.
      if (file.pspUrl !== `http://127.0.0.1:${DEFAULT_PSP_PORT}`) expect(readyLines[i]).toContain(`stand-in listens on ${file.pspUrl}`);
      else expect(readyLines[i]).not.toContain("stand-in");
    });

    for (const run of runs) await pay(page, run);

    // Each stand-in holds exactly its own server's charges.
    for (const file of files) {
      const own = await paymentChargeIds(file.databaseUrl);
      expect(own).toHaveLength(1);
      expect(await chargeIdsAt(file.pspUrl)).toEqual(own);
    }

    // Each server's reconcile, as its user runs it: only the cluster's directory set.
    for (const run of runs) {
      const reconciled = await runScript("npm run --silent reconcile", userEnv(run.dir));
      expect(reconciled.code, reconciled.out).toBe(0);
      expect(reconciled.out).toMatch(/^Reconciled: the ledger matches the provider's 1 charges\./m);
    }

    // PSP_PORT set to a port another database's stand-in holds: one line and a non-zero exit, never that stand-in.
    const taken = new URL(files[0]!.pspUrl).port;
    const third = await startRun(path.join(parent, "pg3"), { PSP_PORT: taken });
    runs.push(third);
    expect(await exited(third.child)).toBe(1);
    const refusals = third
      .output()
      .split("\n")
      .filter((line) => line.startsWith("Cannot start:"));
    expect(refusals, third.output()).toEqual([`Cannot start: ${refusalOf(taken)}`]);
    expect(await chargeIdsAt(files[0]!.pspUrl)).toEqual(await paymentChargeIds(files[0]!.databaseUrl));
  } finally {
    await Promise.all(runs.map(stopRun));
    rmSync(parent, { recursive: true, force: true });
  }
});

const refusalOf = (port: string) =>
  `PSP_PORT=${port} is taken (another server's stand-in, or another program): choose a free PSP_PORT, or leave it unset and the server picks one.`;
