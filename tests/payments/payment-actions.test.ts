/** Capture, void and refunds: each rule refused with a 4xx other than 409, nothing moved twice. */
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { reconcile } from "../../server/reconcile/reconcile";
import { api, ledgerFor, newKey, newTenant, unbalancedTransactions } from "../support/api";
import {
  chargesFor,
  expectCaptureMovement,
  expectRefusal,
  ledgerWhere,
  newPayment,
  paymentRow,
  providerCharges,
  refundRows,
} from "./support";

describe("capture and void", () => {
  it("capture: false authorises only; capture books it once; a second capture and a void are refused (4xx, not 409)", async () => {
    const tenant = await newTenant("capture");
    const auth = await newPayment(tenant, "25.00", false);
    expect(await paymentRow(auth.id)).toMatchObject({ status: "requires_capture", amount_captured_minor: 0 });
    expect(await ledgerFor(tenant.id, auth.key)).toHaveLength(0);
    expect(await chargesFor(auth.id)).toEqual([
      expect.objectContaining({ id: auth.chargeId, status: "requires_capture", captured: false }),
    ]);

    const key = newKey("capture");
    const capture = await api(tenant).post(`/v1/payments/${auth.id}/capture`, {}, key);
    expect(capture.status, capture.text).toBe(200);
    expect(capture.body).toMatchObject({ id: auth.id, status: "succeeded", amount: "25.00" });
    const replay = await api(tenant).post(`/v1/payments/${auth.id}/capture`, {}, key);
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.text).toBe(capture.text);
    await expectCaptureMovement(tenant.id, key, 2500);
    expect(await unbalancedTransactions(tenant.id)).toHaveLength(0);

    const again = await api(tenant).post(`/v1/payments/${auth.id}/capture`, {}, newKey("capture-again"));
    expectRefusal(again);
    const voidAfter = await api(tenant).post(`/v1/payments/${auth.id}/void`, {}, newKey("void-after"));
    expectRefusal(voidAfter);
    expect(await paymentRow(auth.id)).toMatchObject({ status: "succeeded", amount_captured_minor: 2500, pending_action: null });
    expect(await ledgerWhere({ paymentId: auth.id })).toHaveLength(2);
    expect(await chargesFor(auth.id)).toEqual([expect.objectContaining({ status: "succeeded", captured: true })]);
  });

  it("void cancels an authorisation without booking anything; a capture after it is refused", async () => {
    const tenant = await newTenant("void");
    const auth = await newPayment(tenant, "19.99", false);
    const voided = await api(tenant).post(`/v1/payments/${auth.id}/void`, {}, newKey("void"));
    expect(voided.status, voided.text).toBe(200);
    expect(voided.body).toMatchObject({ id: auth.id, status: "canceled" });
    const captureAfter = await api(tenant).post(`/v1/payments/${auth.id}/capture`, {}, newKey("capture-after"));
    expectRefusal(captureAfter);
    expect(await paymentRow(auth.id)).toMatchObject({ status: "canceled", amount_captured_minor: 0, pending_action: null });
    expect(await ledgerWhere({ paymentId: auth.id })).toHaveLength(0);
    expect(await chargesFor(auth.id)).toEqual([expect.objectContaining({ status: "canceled", captured: false })]);
  });
});

describe("refunds", () => {
  it("up to the captured amount in parts; one cent more is refused (4xx, not 409); app, ledger and provider agree", async () => {
    const tenant = await newTenant("refunds");
    const paid = await newPayment(tenant, "50.00");
    const k1 = newKey("refund");
    const r1 = await api(tenant).post(`/v1/payments/${paid.id}/refunds`, { amount: "20.00" }, k1);
    expect(r1.status, r1.text).toBe(201);
    expect(r1.body).toMatchObject({
      id: expect.stringMatching(/^re_/),
      paymentId: paid.id,
      amount: "20.00",
      currency: "EUR",
      status: "succeeded",
    });
    const r1again = await api(tenant).post(`/v1/payments/${paid.id}/refunds`, { amount: "20.00" }, k1);
    expect(r1again.text).toBe(r1.text);
    const k2 = newKey("refund");
    const r2 = await api(tenant).post(`/v1/payments/${paid.id}/refunds`, { amount: "30.00" }, k2);
    expect(r2.status, r2.text).toBe(201);
    const over = await api(tenant).post(`/v1/payments/${paid.id}/refunds`, { amount: "0.01" }, newKey("refund-over"));
    expectRefusal(over);
    expect((await api(tenant).get(`/v1/payments/${paid.id}`)).body).toMatchObject({ amountRefunded: "50.00" });
    expect((await refundRows(paid.id)).map((r) => [r.amount_minor, r.status, r.idempotency_key])).toEqual([
      [2000, "succeeded", k1],
      [3000, "succeeded", k2],
    ]);
    expect((await ledgerFor(tenant.id, k1)).map((e) => [e.ledger_account, e.direction, Number(e.amount_minor)])).toEqual(
      expect.arrayContaining([
        ["refunds", "debit", 2000],
        ["psp_clearing", "credit", 2000],
      ]),
    );
    expect(await ledgerFor(tenant.id, k2)).toHaveLength(2);
    expect(await unbalancedTransactions(tenant.id)).toHaveLength(0);
    const [charge] = await chargesFor(paid.id);
    expect(charge).toMatchObject({ amountRefunded: 5000 });
    expect(charge!.refunds.map((r) => r.amount)).toEqual([2000, 3000]);
    expect(await reconcile(database().db, await providerCharges(), { tenantId: tenant.id })).toEqual([]);
  });

  it("more than captured at once, or of an authorisation only: refused (4xx, not 409), nothing reserved or refunded", async () => {
    const tenant = await newTenant("refunds-refused");
    const paid = await newPayment(tenant, "50.00");
    expectRefusal(await api(tenant).post(`/v1/payments/${paid.id}/refunds`, { amount: "50.01" }, newKey("refund-too-much")));
    const auth = await newPayment(tenant, "10.00", false);
    expectRefusal(await api(tenant).post(`/v1/payments/${auth.id}/refunds`, { amount: "1.00" }, newKey("refund-uncaptured")));
    expect(await paymentRow(paid.id)).toMatchObject({ amount_refunded_minor: 0 });
    expect(await paymentRow(auth.id)).toMatchObject({ amount_refunded_minor: 0, status: "requires_capture" });
    expect([...(await refundRows(paid.id)), ...(await refundRows(auth.id))]).toHaveLength(0);
    const all = await providerCharges();
    expect((await chargesFor(paid.id, all))[0]).toMatchObject({ amountRefunded: 0, refunds: [] });
    expect(await ledgerWhere({ tenantId: tenant.id })).toHaveLength(2);
  });
});
