/**
 * POST /v1/webhooks/psp: signed provider events. A bad or missing signature
 * records nothing; an event is applied once however often it arrives; what
 * cannot be applied (unknown payment, over-refund) is still answered 200,
 * recorded and flagged; the ledger shows an event's entries to the payment's
 * tenant only. Each test uses its own tenant, payment and event id.
 */
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { reconcile } from "../../server/reconcile/reconcile";
import { api, newKey, newTenant } from "../support/api";
import {
  chargesFor,
  deliver,
  expectProblem,
  ledgerWhere,
  newEventId,
  newPayment,
  paymentRow,
  providerCharges,
  refundAtProvider,
  refundRows,
  signatureOf,
  signed,
  webhookEvent,
  type WebhookEvent,
} from "./support";

const refunded = (paymentId: string, amount: string, id = newEventId()): WebhookEvent => ({
  id,
  type: "charge.refunded",
  data: { paymentId, amount },
});

describe("signatures", () => {
  it.each([
    ["missing", () => null],
    ["not hex", () => "not-a-signature"],
    ["signed with another secret", (raw: string) => signed(JSON.parse(raw) as WebhookEvent, "whsec_someone_else").signature],
    ["for other bytes", (raw: string) => signed({ ...(JSON.parse(raw) as WebhookEvent), type: "charge.refunded " }).signature],
  ])("%s: 401 problem, nothing recorded, nothing booked", async (_label, signatureFor: (raw: string) => string | null) => {
    const tenant = await newTenant("webhook-signature");
    const paid = await newPayment(tenant);
    const event = refunded(paid.id, "10.00");
    const { raw } = signed(event);
    const res = await deliver(raw, signatureFor(raw));
    expectProblem(res, 401, "invalid-signature");
    expect(await webhookEvent(event.id)).toBeUndefined();
    expect(await ledgerWhere({ eventId: event.id })).toHaveLength(0);
    expect(await refundRows(paid.id)).toHaveLength(0);
    expect(await paymentRow(paid.id)).toMatchObject({ amount_refunded_minor: 0 });
  });

  it("the signature covers the raw bytes: a re-serialised body needs its own signature", async () => {
    const tenant = await newTenant("webhook-bytes");
    const paid = await newPayment(tenant);
    await refundAtProvider(paid.chargeId, 500, newKey("psp-refund"));
    const event = refunded(paid.id, "5.00");
    const pretty = JSON.stringify(event, null, 2);
    // Signed compact, sent pretty-printed: the bytes differ, so the signature does not hold.
    expectProblem(await deliver(pretty, signed(event).signature), 401, "invalid-signature");
    expect(await webhookEvent(event.id)).toBeUndefined();
    const ok = await deliver(pretty, signatureOf(pretty));
    expect(ok.status, ok.text).toBe(200);
    expect(await ledgerWhere({ eventId: event.id })).toHaveLength(2);
  });
});

describe("processing", () => {
  it("a valid event is applied once; a redelivery is 200 with no second effect", async () => {
    const tenant = await newTenant("webhook-once");
    const paid = await newPayment(tenant, "50.00");
    await refundAtProvider(paid.chargeId, 1500, newKey("psp-refund"));
    const event = refunded(paid.id, "15.00");
    const { raw, signature } = signed(event);
    const first = await deliver(raw, signature);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toEqual({ received: true, duplicate: false });
    const check = async () => {
      expect(await webhookEvent(event.id)).toMatchObject({ tenant_id: tenant.id, payment_id: paid.id, flag: null });
      expect((await refundRows(paid.id)).map((r) => [r.amount_minor, r.status, r.event_id])).toEqual([[1500, "succeeded", event.id]]);
      expect(await paymentRow(paid.id)).toMatchObject({ amount_refunded_minor: 1500 });
      const entries = await ledgerWhere({ eventId: event.id });
      expect(entries.map((e) => [e.ledger_account, e.direction, e.amount_minor]).sort()).toEqual([
        ["psp_clearing", "credit", 1500],
        ["refunds", "debit", 1500],
      ]);
      expect(entries.every((e) => e.payment_id === paid.id && e.idempotency_key === null)).toBe(true);
    };
    await check();
    for (let i = 0; i < 2; i++) {
      const again = await deliver(raw, signature);
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ received: true, duplicate: true });
    }
    await check();
    expect((await api(tenant).get(`/v1/payments/${paid.id}`)).body.amountRefunded).toBe("15.00");
    // The app's books and the provider's agree on this payment.
    expect((await chargesFor(paid.id))[0]).toMatchObject({ amountRefunded: 1500 });
    expect(await reconcile(database().db, await providerCharges(), { tenantId: tenant.id })).toEqual([]);
  });

  it("an event for an unknown payment: 200, recorded and flagged unknown_payment, nothing booked", async () => {
    const event = refunded("pay_doesnotexist0000000", "10.00");
    const { raw, signature } = signed(event);
    const res = await deliver(raw, signature);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, duplicate: false });
    expect(await webhookEvent(event.id)).toMatchObject({ payment_id: "pay_doesnotexist0000000", flag: "unknown_payment" });
    expect(await ledgerWhere({ eventId: event.id })).toHaveLength(0);
    expect(await database().sql`select 1 from refunds where event_id = ${event.id}`).toHaveLength(0);
    expect((await deliver(raw, signature)).body).toEqual({ received: true, duplicate: true });
  });

  it("an over-refund: 200, recorded and flagged over_refund; amountRefunded and the ledger unchanged; reconciliation lists it", async () => {
    const tenant = await newTenant("webhook-over");
    const paid = await newPayment(tenant, "50.00");
    const refundKey = newKey("refund");
    expect((await api(tenant).post(`/v1/payments/${paid.id}/refunds`, { amount: "40.00" }, refundKey)).status).toBe(201);
    const event = refunded(paid.id, "20.00");
    const { raw, signature } = signed(event);
    const res = await deliver(raw, signature);
    expect(res.status, res.text).toBe(200);
    expect(await webhookEvent(event.id)).toMatchObject({ tenant_id: tenant.id, payment_id: paid.id, flag: "over_refund" });
    expect(await paymentRow(paid.id)).toMatchObject({ amount_refunded_minor: 4000 });
    expect((await api(tenant).get(`/v1/payments/${paid.id}`)).body.amountRefunded).toBe("40.00");
    expect(await ledgerWhere({ eventId: event.id })).toHaveLength(0);
    expect((await refundRows(paid.id)).map((r) => r.idempotency_key)).toEqual([refundKey]);
    const differences = await reconcile(database().db, await providerCharges(), { tenantId: tenant.id });
    expect(differences).toEqual([expect.objectContaining({ kind: "webhook_over_refund", eventId: event.id, paymentId: paid.id })]);
  });

  it("GET /v1/ledger?eventId= shows an applied event's entries to the payment's tenant and nothing to another tenant", async () => {
    const [owner, other] = await Promise.all([newTenant("webhook-owner"), newTenant("webhook-other")]);
    const paid = await newPayment(owner, "30.00");
    await refundAtProvider(paid.chargeId, 1000, newKey("psp-refund"));
    const event = refunded(paid.id, "10.00");
    const { raw, signature } = signed(event);
    expect((await deliver(raw, signature)).status).toBe(200);
    const mine = await api(owner).get(`/v1/ledger?eventId=${event.id}`);
    expect(mine.status).toBe(200);
    const rows = await ledgerWhere({ eventId: event.id });
    expect(rows).toHaveLength(2);
    expect((mine.body.data as { id: string }[]).map((e) => e.id).sort()).toEqual(rows.map((r) => r.id).sort());
    const theirs = await api(other).get(`/v1/ledger?eventId=${event.id}`);
    expect(theirs.status).toBe(200);
    expect(theirs.body).toEqual({ data: [] });
  });
});
