/**
 * The completer end to end: a shopper pays on the slow provider, closes the
 * tab while the charge is in flight, and the server is killed (SIGKILL) and
 * started again. Nobody retries; the restarted server's completer finishes
 * the payment. The admin then sees the key completed by the completer, and
 * the confirmation link shows the order paid — checked in the database and
 * at the provider too.
 *
 * The server killed here is this spec's own (its own database and provider
 * stand-in, which must outlive the server), never the run's shared one.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { expect, test } from "@playwright/test";
import postgres, { type Sql } from "postgres";
import { startPspProcess, type PspProcess } from "../../server/psp/process";
import { createFreshDatabase, freePort, type FreshDatabase } from "../../tests/support/database";
import { AdminKeyPage, AdminPage } from "../pages/admin-page";
import { CheckoutPage, ConfirmationPage } from "../pages/checkout-page";

const root = path.resolve(import.meta.dirname, "..", "..");
const DEMO_TENANT = "ten_demo";
const MUG = "Mug “Exactly once”";
/** Long enough to close the tab and kill the server while the provider still holds its answer. */
const PSP_SLOW_MS = 6000;
const LEASE_MS = 3000;
const COMPLETER_INTERVAL_MS = 1000;

let database: FreshDatabase;
let psp: PspProcess;
let sql: Sql;
let port: number;
let server: ChildProcess | undefined;

/** The run command in a process group of its own, so one signal reaches the Next.js server under it. */
async function startServer(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    cwd: root,
    detached: true,
    stdio: ["ignore", "ignore", "inherit"],
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: database.url,
      PSP_URL: psp.url,
      IDEMPOTENCY_LEASE_MS: String(LEASE_MS),
      COMPLETER_INTERVAL_MS: String(COMPLETER_INTERVAL_MS),
      LOG_LEVEL: "warn",
    },
  });
  await expect
    .poll(async () => (await fetch(`http://127.0.0.1:${port}/api/health`).catch(() => undefined))?.status, {
      timeout: 180_000,
      message: "the server never became healthy",
    })
    .toBe(200);
  return child;
}

async function stopServer(signal: NodeJS.Signals): Promise<void> {
  const child = server;
  server = undefined;
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  process.kill(-child.pid, signal);
  await exited;
}

async function providerChargesFor(reference: string): Promise<unknown[]> {
  const listed = (await (await fetch(`${psp.url}/charges`)).json()) as { data: { reference?: string | null }[] };
  return listed.data.filter((c) => c.reference === reference);
}

test.describe.configure({ mode: "serial", timeout: 300_000 });

test.beforeAll(async () => {
  [database, port] = await Promise.all([createFreshDatabase("e2e_completer"), freePort()]);
  psp = await startPspProcess({ port: await freePort(), slowMs: PSP_SLOW_MS, webhookSecret: "whsec_e2e_completer" });
  sql = postgres(database.url, { max: 2, onnotice: () => undefined });
  server = await startServer();
});

test.afterAll(async () => {
  await stopServer("SIGTERM");
  await sql?.end();
  await psp?.stop();
  await database?.dispose();
});

test("the tab closed mid-payment and the server killed: the completer finishes the order; the admin sees it; the confirmation shows it paid", async ({
  browser,
}) => {
  const context = await browser.newContext({ baseURL: `http://127.0.0.1:${port}` });
  const shopper = await context.newPage();
  const checkout = new CheckoutPage(shopper);
  await checkout.goto();
  await checkout.add(MUG);
  await checkout.choose("slow");
  const key = await checkout.currentKey();
  expect(key).not.toBe("");
  await checkout.payButton.click();

  // The order and its payment are committed and the provider holds the charge; its answer is seconds away.
  let paymentId = "";
  await expect
    .poll(
      async () => {
        const [payment] = await sql<{ id: string; status: string }[]>`
          select id, status from payments where tenant_id = ${DEMO_TENANT} and idempotency_key = ${key}`;
        paymentId = payment?.id ?? "";
        return payment ? { status: payment.status, charges: (await providerChargesFor(payment.id)).length } : undefined;
      },
      { timeout: 30_000 },
    )
    .toEqual({ status: "pending", charges: 1 });
  await shopper.close();
  await stopServer("SIGKILL");
  const [stranded] = await sql<{ state: string }[]>`select state from idempotency_keys where tenant_id = ${DEMO_TENANT} and key = ${key}`;
  expect(stranded?.state).toBe("in_progress");

  server = await startServer();
  // Nobody retries: the restarted server's completer takes the key over once its lease is over.
  await expect
    .poll(
      async () =>
        (
          await sql<{ state: string; completed_by: string | null }[]>`
          select state, completed_by from idempotency_keys where tenant_id = ${DEMO_TENANT} and key = ${key}`
        )[0],
      { timeout: 60_000 },
    )
    .toEqual({ state: "completed", completed_by: "completer" });
  const orders = await sql<
    { id: string; status: string }[]
  >`select id, status from orders where tenant_id = ${DEMO_TENANT} and idempotency_key = ${key}`;
  expect(orders).toEqual([expect.objectContaining({ status: "paid" })]);
  expect(await sql`select status from payments where tenant_id = ${DEMO_TENANT} and idempotency_key = ${key}`).toEqual([
    { status: "succeeded" },
  ]);
  expect(await providerChargesFor(paymentId)).toHaveLength(1);
  const ledger = await sql<
    { direction: string }[]
  >`select direction from ledger_entries where tenant_id = ${DEMO_TENANT} and idempotency_key = ${key}`;
  expect(ledger.map((e) => e.direction).sort()).toEqual(["credit", "debit"]);

  const adminTab = await context.newPage();
  const admin = new AdminPage(adminTab);
  await admin.goto();
  await admin.signIn();
  await expect(admin.heading).toBeVisible();
  const keyPage = new AdminKeyPage(adminTab);
  await keyPage.goto(DEMO_TENANT, key);
  await expect(keyPage.field("Completed by")).toHaveText("the completer (its client has not come back)");
  await expect(keyPage.field("State")).toContainText("by the completer");
  await expect(keyPage.timeline).toContainText("Completer attempt");
  await expect(keyPage.timeline).toContainText("Completed by the completer");

  const confirmationTab = await context.newPage();
  await confirmationTab.goto(`/checkout/confirmation/${orders[0]!.id}?key=${encodeURIComponent(key)}`);
  const confirmation = new ConfirmationPage(confirmationTab);
  await expect(confirmation.heading).toBeVisible();
  await expect(confirmation.orderId).toHaveText(orders[0]!.id);
  await expect(confirmationTab.getByRole("definition").nth(1)).toContainText(`${paymentId} (succeeded)`);
  await context.close();
});
