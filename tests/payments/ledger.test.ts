/** GET /v1/ledger: exactly the movements a key or webhook event caused, to its tenant only. */
import { describe, expect, it } from "vitest";
import { api, newKey, newTenant, type Answer } from "../support/api";
import { deliver, expectFieldError, ledgerWhere, newEventId, newPayment, refundAtProvider, signed } from "./support";

describe("GET /v1/ledger", () => {
  const ids = (a: Answer) => (a.body.data as { id: string }[]).map((e) => e.id).sort();

  it("?idempotencyKey=K lists exactly the entries that key caused", async () => {
    const tenant = await newTenant("ledger-key");
    const paid = await newPayment(tenant, "40.00");
    const refundKey = newKey("refund");
    expect((await api(tenant).post(`/v1/payments/${paid.id}/refunds`, { amount: "15.00" }, refundKey)).status).toBe(201);
    for (const key of [paid.key, refundKey]) {
      const view = await api(tenant).get(`/v1/ledger?idempotencyKey=${encodeURIComponent(key)}`);
      expect(view.status).toBe(200);
      const rows = await ledgerWhere({ tenantId: tenant.id, key });
      expect(rows).toHaveLength(2);
      expect(ids(view)).toEqual(rows.map((r) => r.id).sort());
      for (const e of view.body.data as Record<string, unknown>[]) {
        expect(e).toMatchObject({
          idempotencyKey: key,
          paymentId: paid.id,
          currency: "EUR",
          direction: expect.stringMatching(/^(debit|credit)$/),
        });
      }
    }
    expectFieldError(await api(tenant).get("/v1/ledger"), "idempotencyKey");
    expect((await api(tenant).get(`/v1/ledger?idempotencyKey=${newKey("unused")}`)).body).toEqual({ data: [] });
  });

  it("?eventId=E lists the entries a webhook event caused", async () => {
    const tenant = await newTenant("ledger-event");
    const paid = await newPayment(tenant, "40.00");
    await refundAtProvider(paid.chargeId, 1000, newKey("psp-refund"));
    const eventId = newEventId();
    const { raw, signature } = signed({ id: eventId, type: "charge.refunded", data: { paymentId: paid.id, amount: "10.00" } });
    expect((await deliver(raw, signature)).status).toBe(200);
    const view = await api(tenant).get(`/v1/ledger?eventId=${eventId}`);
    expect(view.status).toBe(200);
    const rows = await ledgerWhere({ eventId });
    expect(rows.map((r) => [r.ledger_account, r.direction, r.amount_minor])).toEqual(
      expect.arrayContaining([
        ["refunds", "debit", 1000],
        ["psp_clearing", "credit", 1000],
      ]),
    );
    expect(ids(view)).toEqual(rows.map((r) => r.id).sort());
    expect(
      (view.body.data as Record<string, unknown>[]).every(
        (e) => e.eventId === eventId && e.idempotencyKey === null && e.paymentId === paid.id,
      ),
    ).toBe(true);
  });
});
