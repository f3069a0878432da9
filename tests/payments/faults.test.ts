/**
 * Faults between the app and the provider: a provider that fails once, a
 * provider slower than the app's timeout, the app killed with SIGKILL while a
 * charge is in flight, and a provider that refuses what the app reserved.
 * Each ends with exactly one charge at the provider, a balanced ledger, and
 * nothing for reconciliation to report.
 */
import { describe, expect, inject, it } from "vitest";
import { database } from "../../db/client";
import { appWith } from "../support/app";
import { reconcile } from "../../server/reconcile/reconcile";
import { api, ledgerFor, newKey, newTenant, unbalancedTransactions, type Tenant } from "../support/api";
import {
  chargesFor,
  deliver,
  expectCaptureMovement,
  expectProblem,
  expectRefusal,
  keyRow,
  killOnceCharged,
  ledgerWhere,
  newEventId,
  newPayment,
  pay,
  payChild,
  paymentRow,
  paymentsForKey,
  providerCharges,
  refundAtProvider,
  refundRows,
  signed,
  sleep,
  webhookEvent,
} from "./support";

/** The provider's delay for acct_test_slow in tests (tests/global-setup.ts). */
const PSP_SLOW_MS = 1500;

const used: Tenant[] = [];
async function tenantFor(label: string) {
  const tenant = await newTenant(label);
  used.push(tenant);
  return tenant;
}

/** One payment for the key, charged once, booked once: what every fault must end in. */
async function expectSettledOnce(tenant: Tenant, key: string, paymentId: string, amountMinor: number) {
  const rows = await paymentsForKey(tenant.id, key);
  expect(rows).toEqual([expect.objectContaining({ id: paymentId, status: "succeeded", amount_captured_minor: amountMinor })]);
  expect(await chargesFor(paymentId)).toEqual([
    expect.objectContaining({ id: rows[0]!.psp_charge_id, amount: amountMinor, captured: true }),
  ]);
  await expectCaptureMovement(tenant.id, key, amountMinor);
  expect(await unbalancedTransactions(tenant.id)).toHaveLength(0);
  expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", response_status: 201 });
}

describe("provider faults", () => {
  it("(a) acct_test_error: the provider fails the first attempt; the app retries with the same downstream key; one charge", async () => {
    const tenant = await tenantFor("fault-error");
    const key = newKey("error");
    const res = await pay(tenant, key, { amount: "17.00", destination: "acct_test_error" });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ status: "succeeded", destination: "acct_test_error" });
    await expectSettledOnce(tenant, key, res.body.id as string, 1700);
  });

  it("(b) a provider slower than the app's timeout: 503 with the payment pending; the retry after it finished is 201 with the same payment, charged once", async () => {
    const tenant = await tenantFor("fault-timeout");
    const key = newKey("timeout");
    const body = { amount: "33.00", destination: "acct_test_slow" };
    const started = Date.now();
    // Three attempts of 300 ms each end well before the provider answers after 1.5 s.
    const first = await pay(tenant, key, body, appWith({ PSP_TIMEOUT_MS: 300 }));
    expectProblem(first, 503, "upstream-unavailable");
    const [pending] = await paymentsForKey(tenant.id, key);
    expect(pending).toMatchObject({ status: "pending", psp_charge_id: null });
    // The outcome is unknown to the app, not to the provider: the charge exists already.
    expect(await chargesFor(pending!.id)).toHaveLength(1);
    expect(await ledgerFor(tenant.id, key)).toHaveLength(0);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "in_progress", response_status: null });

    await sleep(Math.max(0, started + PSP_SLOW_MS + 200 - Date.now()));
    const retry = await pay(tenant, key, body);
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body).toMatchObject({ id: pending!.id, status: "succeeded", amount: "33.00" });
    await expectSettledOnce(tenant, key, pending!.id, 3300);
    const replay = await pay(tenant, key, body);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.text).toBe(retry.text);
  });

  it("(c) the app killed with SIGKILL while the charge is in flight: a retry takes the key over after the lease and finishes once", async () => {
    const tenant = await tenantFor("fault-kill");
    const key = newKey("killed");
    const amount = "44.00";
    const holder = payChild(tenant, key, amount);
    const paymentId = await killOnceCharged(holder, tenant.id, key);
    expect(holder.output()).not.toContain("finished");
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "in_progress" });
    expect(await ledgerFor(tenant.id, key)).toHaveLength(0);

    // The restarted app: the same request with the same key waits out the dead holder's lease, then takes over.
    const retry = await pay(tenant, key, { amount, destination: "acct_test_slow" });
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body).toMatchObject({ id: paymentId, status: "succeeded", amount });
    await expectSettledOnce(tenant, key, paymentId, 4400);
    expect(await reconcile(database().db, await providerCharges(), { tenantId: tenant.id })).toEqual([]);
  });
});

/**
 * The provider's state can move without the app (a refund or void in the
 * provider's dashboard, its webhook still on the way). When the provider then
 * refuses what the app asked for, that is a decided outcome, not an unknown
 * one: the client must get a refusal it will not retry forever, and the
 * app's reservation must not outlive the refusal.
 */
describe("the provider refuses work the app had already reserved", () => {
  it("a refund the provider refuses (the charge was refunded at the provider first): a 4xx, the reservation released, the late webhook applies", async () => {
    const tenant = await newTenant("fault-refund-refused");
    const paid = await newPayment(tenant, "50.00");
    await refundAtProvider(paid.chargeId, 3000, newKey("dashboard"));
    const key = newKey("refund");
    const refused = await api(tenant).post(`/v1/payments/${paid.id}/refunds`, { amount: "30.00" }, key);
    expectRefusal(refused);
    expect(await paymentRow(paid.id)).toMatchObject({ amount_refunded_minor: 0 });
    expect((await refundRows(paid.id)).filter((r) => r.status === "pending")).toEqual([]);
    expect(await ledgerFor(tenant.id, key)).toHaveLength(0);
    // The provider's event for its own refund now fits and is booked, and the books agree with the provider.
    const event = { id: newEventId(), type: "charge.refunded", data: { paymentId: paid.id, amount: "30.00" } };
    const { raw, signature } = signed(event);
    expect((await deliver(raw, signature)).status).toBe(200);
    expect(await webhookEvent(event.id)).toMatchObject({ flag: null });
    expect(await paymentRow(paid.id)).toMatchObject({ amount_refunded_minor: 3000 });
    expect(await reconcile(database().db, await providerCharges(), { tenantId: tenant.id })).toEqual([]);
  });

  it("a capture the provider refuses (the charge was voided at the provider): a 4xx, and no capture left pending on the payment", async () => {
    const tenant = await newTenant("fault-capture-refused");
    const auth = await newPayment(tenant, "25.00", false);
    const voided = await fetch(`${inject("pspUrl")}/charges/${auth.chargeId}/void`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": newKey("dashboard") },
      body: "{}",
    });
    expect(voided.status).toBe(200);
    const key = newKey("capture");
    const refused = await api(tenant).post(`/v1/payments/${auth.id}/capture`, {}, key);
    expectRefusal(refused);
    const row = await paymentRow(auth.id);
    expect(row?.pending_action).toBeNull();
    expect(row?.status).not.toBe("succeeded");
    expect(await ledgerWhere({ paymentId: auth.id })).toHaveLength(0);
  });
});

describe("at the end", () => {
  it("(d) reconciliation finds nothing to report for the tenants of (a)–(c)", async () => {
    expect(used).toHaveLength(3);
    const charges = await providerCharges();
    for (const tenant of used) {
      expect(await reconcile(database().db, charges, { tenantId: tenant.id }), tenant.name).toEqual([]);
    }
  });
});
