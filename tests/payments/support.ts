/**
 * Shared helpers for the payment tests: the provider's own view of its
 * charges, the rows the app wrote (read with SQL, not through the API under
 * test), signed webhook deliveries and problem+json checks. Every reader is
 * scoped to one tenant, key, payment or event, because other test files run
 * in parallel on the same database and the same provider process.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { expect, inject, onTestFinished } from "vitest";
import { database } from "../../db/client";
import { app, type App } from "../../server/app";
import { chargeListSchema, type ChargeWithRefunds } from "../../server/psp/schemas";
import { signWebhook } from "../../server/psp/stand-in";
import { api, ledgerFor, newKey, type Answer, type Tenant } from "../support/api";
import { appWith } from "../support/app";
import { freePort } from "../support/database";

/** What tests/global-setup.ts gives the provider and the app. */
export const WEBHOOK_SECRET = "whsec_test_only";

export const PAYMENT = { amount: "25.00", currency: "EUR", destination: "acct_test_123" } as const;

export const pay = (tenant: Tenant, key: string | null, body: Record<string, unknown> = {}, via?: App) =>
  api(tenant, via).post("/v1/payments", { ...PAYMENT, ...body }, key);

/** A payment made for a test's setup: captured, or only authorised with `capture: false`. */
export async function newPayment(tenant: Tenant, amount = "50.00", capture = true) {
  const key = newKey(capture ? "captured" : "authorized");
  const res = await pay(tenant, key, { amount, capture });
  expect(res.status, res.text).toBe(201);
  const id = res.body.id as string;
  const [row] = await paymentsWhere({ id });
  expect(row?.status).toBe(capture ? "succeeded" : "requires_capture");
  return { id, key, chargeId: row!.psp_charge_id! };
}

/** The two lines a captured charge posts under its key: the provider owes us, we earned it. */
export async function expectCaptureMovement(tenantId: string, key: string, amountMinor: number) {
  const entries = await ledgerFor(tenantId, key);
  expect(entries.map((e) => [e.ledger_account, e.direction, Number(e.amount_minor)]).sort()).toEqual([
    ["psp_clearing", "debit", amountMinor],
    ["sales", "credit", amountMinor],
  ]);
  expect(new Set(entries.map((e) => e.transaction_id)).size).toBe(1);
}

/** Every charge the provider holds, with its refunds. */
export async function providerCharges(): Promise<ChargeWithRefunds[]> {
  const res = await fetch(`${inject("pspUrl")}/charges`);
  expect(res.status).toBe(200);
  return chargeListSchema.parse(await res.json()).data;
}

/** The provider's charges for one payment: the app sends the payment id as `reference`. */
export async function chargesFor(paymentId: string, all?: ChargeWithRefunds[]): Promise<ChargeWithRefunds[]> {
  return (all ?? (await providerCharges())).filter((c) => c.reference === paymentId);
}

/** Refunds a charge at the provider directly, as a merchant could in the provider's dashboard. */
export async function refundAtProvider(chargeId: string, amountMinor: number, key: string) {
  const res = await fetch(`${inject("pspUrl")}/charges/${encodeURIComponent(chargeId)}/refunds`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ amount: amountMinor }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; chargeId: string; amount: number };
}

export type PaymentRow = {
  id: string;
  status: string;
  amount_minor: number;
  amount_captured_minor: number;
  amount_refunded_minor: number;
  psp_charge_id: string | null;
  pending_action: string | null;
  idempotency_key: string | null;
};

/** The payment rows matching every given filter, oldest first. */
export async function paymentsWhere(filter: { tenantId?: string; key?: string; id?: string }): Promise<PaymentRow[]> {
  const s = database().sql;
  return s<PaymentRow[]>`
    select id, status, amount_minor::int, amount_captured_minor::int, amount_refunded_minor::int, psp_charge_id, pending_action, idempotency_key
    from payments
    where true
      ${filter.tenantId ? s`and tenant_id = ${filter.tenantId}` : s``}
      ${filter.key ? s`and idempotency_key = ${filter.key}` : s``}
      ${filter.id ? s`and id = ${filter.id}` : s``}
    order by created_at, id`;
}

export const paymentsForKey = (tenantId: string, key: string) => paymentsWhere({ tenantId, key });
export const paymentsOfTenant = (tenantId: string) => paymentsWhere({ tenantId });
export const paymentRow = async (id: string): Promise<PaymentRow | undefined> => (await paymentsWhere({ id }))[0];

export async function refundRows(paymentId: string) {
  return database().sql<{ id: string; amount_minor: number; status: string; idempotency_key: string | null; event_id: string | null }[]>`
    select id, amount_minor::int, status, idempotency_key, event_id from refunds where payment_id = ${paymentId} order by created_at, id`;
}

export type LedgerRow = {
  id: string;
  transaction_id: string;
  ledger_account: string;
  direction: "debit" | "credit";
  amount_minor: number;
  idempotency_key: string | null;
  event_id: string | null;
  payment_id: string | null;
  account_id: string | null;
  order_id: string | null;
};

export async function ledgerWhere(filter: {
  tenantId?: string;
  key?: string;
  eventId?: string;
  paymentId?: string;
  accountId?: string;
}): Promise<LedgerRow[]> {
  const s = database().sql;
  return s<LedgerRow[]>`
    select id, transaction_id, ledger_account, direction, amount_minor::int, idempotency_key, event_id, payment_id, account_id, order_id
    from ledger_entries
    where true
      ${filter.tenantId ? s`and tenant_id = ${filter.tenantId}` : s``}
      ${filter.key ? s`and idempotency_key = ${filter.key}` : s``}
      ${filter.eventId ? s`and event_id = ${filter.eventId}` : s``}
      ${filter.paymentId ? s`and payment_id = ${filter.paymentId}` : s``}
      ${filter.accountId ? s`and account_id = ${filter.accountId}` : s``}
    order by created_at, id`;
}

/** The idempotency key's row, or undefined when the request never claimed it. */
export async function keyRow(tenantId: string, key: string) {
  const [row] = await database().sql<{ state: string; response_status: number | null; response_body: string | null }[]>`
    select state, response_status, response_body from idempotency_keys where tenant_id = ${tenantId} and key = ${key}`;
  return row;
}

export async function webhookEvent(id: string) {
  const [row] = await database().sql<{ id: string; tenant_id: string | null; payment_id: string | null; flag: string | null }[]>`
    select id, tenant_id, payment_id, flag from webhook_events where id = ${id}`;
  return row;
}

export async function accountBalance(id: string): Promise<number | undefined> {
  const [row] = await database().sql<{ balance_minor: number }[]>`select balance_minor::int from accounts where id = ${id}`;
  return row?.balance_minor;
}

export async function ordersOfTenant(tenantId: string) {
  return database().sql<{ id: string; status: string; payment_id: string | null; coupon_code: string | null; total_minor: number }[]>`
    select id, status, payment_id, coupon_code, total_minor::int from orders where tenant_id = ${tenantId} order by created_at, id`;
}

/** Opens every connection of the pool first, so a burst does not wait on connection set-up and starts staggered. */
export async function warmPool(connections = 30) {
  await Promise.all(Array.from({ length: connections }, () => database().sql`select pg_sleep(0.01)`));
}

/** A problem+json answer with this status and type. */
export function expectProblem(a: Answer, status: number, slug: string) {
  expect(a.status, a.text).toBe(status);
  expect(a.headers.get("content-type")).toBe("application/problem+json");
  expect(a.body).toMatchObject({ type: `/problems/${slug}`, status });
  expect(typeof a.body.detail).toBe("string");
}

/** A business refusal: a 4xx clients do not retry, so anything but 409 (and never a 5xx). */
export function expectRefusal(a: Answer) {
  expect(a.status, a.text).toBeGreaterThanOrEqual(400);
  expect(a.status, a.text).toBeLessThan(500);
  expect(a.status, a.text).not.toBe(409);
  expect(a.headers.get("content-type")).toBe("application/problem+json");
  expect(a.body.status).toBe(a.status);
}

/** A 400 whose problem names `field` among its errors. */
export function expectFieldError(a: Answer, field: string) {
  expectProblem(a, 400, "validation");
  const errors = a.body.errors as { field: string }[] | undefined;
  expect(errors?.map((e) => e.field)).toContain(field);
}

export type WebhookEvent = { id: string; type: string; data: Record<string, unknown> };

/** The provider's signature of exactly these bytes. */
export const signatureOf = (raw: string, secret = WEBHOOK_SECRET) => signWebhook(raw, secret);

/** The exact bytes the provider would send, and their signature. */
export function signed(event: WebhookEvent, secret = WEBHOOK_SECRET) {
  const raw = JSON.stringify(event);
  return { raw, signature: signatureOf(raw, secret) };
}

/** POSTs a webhook as the provider does: no tenant token, the signature over the raw body. */
export async function deliver(raw: string, signature: string | null, via: App = app): Promise<Answer> {
  const headers = new Headers({ "content-type": "application/json" });
  if (signature !== null) headers.set("Psp-Signature", signature);
  const res = await via.handleRest(new Request("http://test/api/v1/webhooks/psp", { method: "POST", headers, body: raw }));
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : {}, headers: res.headers };
}

export const newEventId = () => `evt_${crypto.randomUUID().replaceAll("-", "")}`;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The app as its own process (pay-child.ts), to be killed with SIGKILL at a
 * chosen moment: a real crash of the holder, not a simulation. A failed
 * assertion never leaves it running past the test.
 */
export function payChild(
  tenant: Tenant,
  key: string,
  amount: string,
  destination = "acct_test_slow",
  extraEnv: Record<string, string> = {},
) {
  const child = spawn(process.execPath, ["--import", "tsx", "tests/payments/pay-child.ts", tenant.id, key, amount, destination], {
    env: {
      ...process.env,
      DATABASE_URL: inject("databaseUrl"),
      PSP_URL: inject("pspUrl"),
      IDEMPOTENCY_LEASE_MS: "1000",
      LOG_LEVEL: "silent",
      ...extraEnv,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = once(child, "exit");
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  return {
    child,
    output: () => output,
    /** Waits for `ready` (polled), then kills the child and waits for it to be gone. */
    async killWhen(ready: () => Promise<boolean>) {
      const deadline = Date.now() + 20_000;
      while (!(await ready())) {
        expect(child.exitCode, `the child exited before it could be killed: ${output}`).toBeNull();
        expect(Date.now(), "the child never got there").toBeLessThan(deadline);
        await sleep(20);
      }
      child.kill("SIGKILL");
      const [, signal] = await exited;
      expect(signal).toBe("SIGKILL");
    },
    exited,
  };
}

/**
 * Kills the holder once its payment row is committed and the provider holds
 * the charge (with acct_test_slow the answer is still 1.5 s away); returns the payment's id.
 */
export async function killOnceCharged(holder: ReturnType<typeof payChild>, tenantId: string, key: string): Promise<string> {
  let paymentId = "";
  await holder.killWhen(async () => {
    const [row] = await paymentsForKey(tenantId, key);
    if (row?.status === "pending" && (await chargesFor(row.id)).length === 1) paymentId = row.id;
    return paymentId !== "";
  });
  return paymentId;
}

/** Runs `fn` with an app whose provider is unreachable (nothing listens on its port). */
export const withProviderDown = async <T>(fn: (down: App) => Promise<T>): Promise<T> =>
  fn(appWith({ PSP_URL: `http://127.0.0.1:${await freePort()}` }));

/** A payment whose client gave up after a 503 (provider unreachable): pending, no charge, its key released. */
export async function abandonedPayment(tenant: Tenant, key: string, body: Record<string, unknown>) {
  const first = await withProviderDown((down) => pay(tenant, key, body, down));
  expect(first.status, first.text).toBe(503);
  const [pending] = await paymentsForKey(tenant.id, key);
  expect(pending).toMatchObject({ status: "pending", psp_charge_id: null });
  expect(await chargesFor(pending!.id)).toHaveLength(0);
  return pending!;
}
