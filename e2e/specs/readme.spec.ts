/**
 * The README's API walkthrough, run as written, so it cannot drift: the
 * `bash` block under "## Try the API" is taken from README.md and run with
 * `set -euo pipefail` against a server of its own (the run command, on a
 * fresh database and its own provider stand-in, so the closing reconcile
 * sees only the walkthrough's payments). Nothing in the text is changed: the
 * block reads the server's port from PORT, which is set to the free port
 * the server listens on, as a user's shell would have it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { expect, test } from "@playwright/test";
import { createFreshDatabase, freePort, type FreshDatabase } from "../../tests/support/database";
import { exited, readmeBlock, root, runScript } from "../support/walkthrough";

async function healthy(url: string, server: ChildProcess): Promise<void> {
  for (;;) {
    if (server.exitCode !== null) throw new Error(`the server exited (${server.exitCode}) before it answered`);
    const ok = await fetch(`${url}/api/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

test("the README's API walkthrough runs as written", async () => {
  // A fresh database, migrations, the run command (the build is the e2e run's) on a loaded machine.
  test.setTimeout(240_000);
  const script = readmeBlock("Try the API");
  expect(script).toContain("localhost:$PORT/");
  expect(script).not.toContain("localhost:3000");

  let database: FreshDatabase | undefined;
  let server: ChildProcess | undefined;
  try {
    database = await createFreshDatabase("readme");
    const [port, pspPort] = [await freePort(), await freePort()];
    const pspUrl = `http://127.0.0.1:${pspPort}`;
    const env = { ...process.env, DATABASE_URL: database.url, PSP_PORT: String(pspPort), LOG_LEVEL: "warn" };
    server = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      cwd: root,
      detached: true,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...env, PORT: String(port) },
    });
    const base = `http://127.0.0.1:${port}`;
    await healthy(base, server);

    // The CLIs reach the same database and provider as the server.
    const { code, out } = await runScript(script, { ...env, PORT: String(port), PSP_URL: pspUrl });
    expect(code, out).toBe(0);

    expect(out).toContain('{"status":"ok","database":"up"}');
    expect(out).toMatch(/"sku":/);
    // curl -s prints bodies without a closing newline, so a status line may follow one on the same line.
    expect((out.match(/HTTP\/1\.1 201/g) ?? []).length, out).toBe(2);
    expect(out).toMatch(/^idempotent-replayed: true/im);
    expect(out).toMatch(/"direction":"debit"/);
    expect(out).toContain('"field":"captur"');
    expect(out).toMatch(/^Reconciled: the ledger matches the provider's 1 charges/m);
  } finally {
    if (server?.pid !== undefined && server.exitCode === null) {
      process.kill(-server.pid, "SIGTERM");
      await exited(server);
    }
    await database?.dispose();
  }
});
