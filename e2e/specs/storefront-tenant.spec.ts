/**
 * A storefront that sells as a tenant of its own, not the demo's: outside
 * demo mode, with STOREFRONT_TENANT_ID naming a tenant a deployment made,
 * the checkout pays as that tenant and the confirmation page reads the
 * order and its attempts as that same one tenant. A server of its own (the
 * e2e run's is in demo mode), on a fresh database.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { expect, test } from "@playwright/test";
import postgres from "postgres";
import { createFreshDatabase, freePort, type FreshDatabase } from "../../tests/support/database";
import { exited, root, runScript } from "../support/walkthrough";

test("the confirmation page works for a storefront tenant that is not the demo's", async ({ page }) => {
  // A fresh database, migrations, a tenant, then the run command on a loaded machine.
  test.setTimeout(240_000);
  let database: FreshDatabase | undefined;
  let server: ChildProcess | undefined;
  try {
    database = await createFreshDatabase("storefront");
    const [port, pspPort] = [await freePort(), await freePort()];
    // Not demo mode: an admin password of the deployment's own. The catalog is seeded as always (with the demo tenant, which sells nothing here).
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: database.url,
      PSP_PORT: String(pspPort),
      ADMIN_PASSWORD: "storefront-e2e-admin-password",
      LOG_LEVEL: "warn",
    };
    delete env.DEMO_MODE;
    delete env.PSP_URL;
    const made = await runScript(
      "npm run --silent db:migrate >/dev/null && npm run --silent tenant -- create 'Shop of its own' >/dev/null",
      env,
    );
    expect(made.code, made.out).toBe(0);
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    const [shop] = await sql<{ id: string }[]>`select id from tenants where name = 'Shop of its own'`;

    server = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      cwd: root,
      detached: true,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...env, PORT: String(port), STOREFRONT_TENANT_ID: shop!.id },
    });
    const base = `http://127.0.0.1:${port}`;
    await expect
      .poll(
        () =>
          fetch(`${base}/api/health`).then(
            (r) => r.status,
            () => 0,
          ),
        { timeout: 180_000 },
      )
      .toBe(200);

    await page.goto(`${base}/checkout`);
    await page
      .getByRole("button", { name: /^Add .* to cart$/ })
      .first()
      .click({ timeout: 30_000 });
    await page.getByRole("button", { name: /^Pay / }).click();
    await expect(page.getByRole("heading", { name: "Order confirmed" })).toBeVisible({ timeout: 30_000 });
    await expect(page.getByRole("list", { name: "Attempts" }).getByRole("listitem").last()).toContainText("answered");

    // Everything the checkout wrote belongs to the storefront's tenant, none to another.
    const orders = await sql<{ tenant_id: string }[]>`select tenant_id from orders`;
    const payments = await sql<{ tenant_id: string }[]>`select tenant_id from payments`;
    await sql.end({ timeout: 5 });
    expect(orders.map((o) => o.tenant_id)).toEqual([shop!.id]);
    expect(payments.map((p) => p.tenant_id)).toEqual([shop!.id]);
  } finally {
    if (server?.pid !== undefined && server.exitCode === null) {
      process.kill(-server.pid, "SIGTERM");
      await exited(server);
    }
    await database?.dispose();
  }
});
