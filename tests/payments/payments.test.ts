/** Creating and reading payments: replay, mismatch, validation, scope, declines, over REST and tRPC. */
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { app } from "../../server/app";
import { api, ledgerFor, newKey, newTenant, trpcError, type Tenant } from "../support/api";
import {
  chargesFor,
  expectCaptureMovement,
  expectFieldError,
  expectProblem,
  keyRow,
  ledgerWhere,
  newPayment,
  pay,
  PAYMENT,
  paymentRow,
  paymentsForKey,
  paymentsOfTenant,
  providerCharges,
  refundRows,
} from "./support";

async function trpcAs(tenant: Tenant, key: string) {
  return app.createCaller(await app.createContextInner({ tenant, headers: new Headers({ "Idempotency-Key": key }) }));
}

describe("POST /v1/payments", () => {
  it("201 once, then replays status and exact bytes with Idempotent-Replayed; one payment, one charge, one movement", async () => {
    const tenant = await newTenant("pay-replay");
    const key = newKey("pay");
    const first = await pay(tenant, key);
    expect(first.status, first.text).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(first.body).toMatchObject({
      id: expect.stringMatching(/^pay_/),
      status: "succeeded",
      ...PAYMENT,
      amountRefunded: "0.00",
      createdAt: expect.any(String),
    });
    for (let i = 0; i < 2; i++) {
      const again = await pay(tenant, key);
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.text).toBe(first.text);
    }
    const id = first.body.id as string;
    const rows = await paymentsForKey(tenant.id, key);
    expect(rows).toEqual([
      expect.objectContaining({ id, status: "succeeded", amount_minor: 2500, amount_captured_minor: 2500, amount_refunded_minor: 0 }),
    ]);
    const charges = await chargesFor(id);
    expect(charges).toEqual([
      expect.objectContaining({
        id: rows[0]!.psp_charge_id,
        amount: 2500,
        currency: "EUR",
        destination: PAYMENT.destination,
        captured: true,
        status: "succeeded",
      }),
    ]);
    await expectCaptureMovement(tenant.id, key, 2500);
    expect(await keyRow(tenant.id, key)).toEqual({ state: "completed", response_status: 201, response_body: first.text });
    const got = await api(tenant).get(`/v1/payments/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(first.body);
  });

  it("the same key with another body or another path: 422, the stored result is not shown, nothing runs", async () => {
    const tenant = await newTenant("pay-mismatch");
    const key = newKey("mismatch");
    const first = await pay(tenant, key);
    expect(first.status).toBe(201);
    const id = first.body.id as string;
    const otherBody = await pay(tenant, key, { amount: "250.00" });
    expectProblem(otherBody, 422, "idempotency-key-mismatch");
    expect(otherBody.text).not.toContain(id);
    const otherPath = await api(tenant).post("/v1/accounts", { currency: "EUR" }, key);
    expectProblem(otherPath, 422, "idempotency-key-mismatch");
    expect(await paymentsOfTenant(tenant.id)).toHaveLength(1);
    expect(await database().sql`select 1 from accounts where tenant_id = ${tenant.id}`).toHaveLength(0);
    expect(await chargesFor(id)).toHaveLength(1);
    expect(await ledgerFor(tenant.id, key)).toHaveLength(2);
    expect((await keyRow(tenant.id, key))?.response_body).toBe(first.text);
  });

  it("without Idempotency-Key: 400, nothing written and nothing charged", async () => {
    const tenant = await newTenant("pay-no-key");
    const destination = `acct_nokey_${crypto.randomUUID().replaceAll("-", "")}`;
    const res = await pay(tenant, null, { destination });
    expectProblem(res, 400, "idempotency-key-missing");
    expect(await paymentsOfTenant(tenant.id)).toHaveLength(0);
    expect(await database().sql`select 1 from idempotency_keys where tenant_id = ${tenant.id}`).toHaveLength(0);
    expect((await providerCharges()).filter((c) => c.destination === destination)).toHaveLength(0);
  });

  // Each case marks its request with a destination (or, when that is the bad field, an amount) no other test uses.
  const marker = () => `acct_val_${crypto.randomUUID().replaceAll("-", "")}`;
  const markerAmount = () => `${700 + Math.floor(Math.random() * 200)}.${String(Math.floor(Math.random() * 100)).padStart(2, "0")}`;
  it.each([
    ["amount", "25", { amount: "25" }],
    ["amount", "25.0", { amount: "25.0" }],
    ["amount", "0.00", { amount: "0.00" }],
    ["amount", "-1.00", { amount: "-1.00" }],
    ["amount", "1000000.01", { amount: "1000000.01" }],
    ["amount", "25 as a number", { amount: 25 }],
    ["currency", "eur", { currency: "eur" }],
    ["currency", "EURO", { currency: "EURO" }],
    ["destination", "missing", { destination: undefined }],
  ])("%s %s: 400 naming the field, nothing written or charged; the fixed body may reuse the key", async (field, _label, change) => {
    const tenant = await newTenant("pay-validation");
    const key = newKey("invalid");
    const destination = marker();
    const amount = markerAmount();
    const body: Record<string, unknown> = { amount, currency: "EUR", destination, ...change };
    const since = Date.now();
    const res = await api(tenant).post("/v1/payments", body, key);
    expectFieldError(res, field);
    expect(await paymentsOfTenant(tenant.id)).toHaveLength(0);
    expect(await keyRow(tenant.id, key)).toBeUndefined();
    expect(await ledgerWhere({ tenantId: tenant.id })).toHaveLength(0);
    const amountMinor = Number(amount.replace(".", ""));
    const marked = (await providerCharges()).filter(
      (c) => c.destination === destination || (c.amount === amountMinor && Date.parse(c.createdAt) >= since - 1000),
    );
    expect(marked).toHaveLength(0);
    // Nothing was pinned to the key, so the corrected request goes through with it.
    const fixed = await api(tenant).post("/v1/payments", { amount, currency: "EUR", destination }, key);
    expect(fixed.status, fixed.text).toBe(201);
    expect(await chargesFor(fixed.body.id as string)).toHaveLength(1);
  });

  it("the bounds themselves are valid: 0.01 and 1000000.00", async () => {
    const tenant = await newTenant("pay-bounds");
    for (const amount of ["0.01", "1000000.00"]) {
      const key = newKey("bound");
      const res = await pay(tenant, key, { amount });
      expect(res.status, res.text).toBe(201);
      expect(res.body.amount).toBe(amount);
      const minor = Number(amount.replace(".", ""));
      expect(await chargesFor(res.body.id as string)).toEqual([expect.objectContaining({ amount: minor })]);
      await expectCaptureMovement(tenant.id, key, minor);
    }
  });

  it("acct_test_decline: 402 stored and replayed byte for byte; the payment is failed, nothing booked, nothing charged", async () => {
    const tenant = await newTenant("pay-decline");
    const key = newKey("decline");
    const first = await pay(tenant, key, { destination: "acct_test_decline" });
    expectProblem(first, 402, "payment-declined");
    const again = await pay(tenant, key, { destination: "acct_test_decline" });
    expect(again.status).toBe(402);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
    const rows = await paymentsForKey(tenant.id, key);
    expect(rows).toEqual([expect.objectContaining({ status: "failed", amount_captured_minor: 0, psp_charge_id: null })]);
    expect(first.body.paymentId).toBe(rows[0]!.id);
    expect(await ledgerFor(tenant.id, key)).toHaveLength(0);
    expect(await chargesFor(rows[0]!.id)).toHaveLength(0);
    expect(await keyRow(tenant.id, key)).toEqual({ state: "failed", response_status: 402, response_body: first.text });
  });

  it("the same key from two tenants: two independent payments, charges and movements", async () => {
    const [a, b] = await Promise.all([newTenant("pay-scope-a"), newTenant("pay-scope-b")]);
    const key = newKey("shared");
    const fromA = await pay(a, key, { amount: "11.00" });
    const fromB = await pay(b, key, { amount: "12.00" });
    expect([fromA.status, fromB.status]).toEqual([201, 201]);
    expect(fromB.headers.get("idempotent-replayed")).toBeNull();
    expect(fromA.body.id).not.toBe(fromB.body.id);
    expect(fromB.body.amount).toBe("12.00");
    expect((await paymentsForKey(a.id, key)).map((p) => p.id)).toEqual([fromA.body.id]);
    expect((await paymentsForKey(b.id, key)).map((p) => p.id)).toEqual([fromB.body.id]);
    const all = await providerCharges();
    expect(await chargesFor(fromA.body.id as string, all)).toEqual([expect.objectContaining({ amount: 1100 })]);
    expect(await chargesFor(fromB.body.id as string, all)).toEqual([expect.objectContaining({ amount: 1200 })]);
    await expectCaptureMovement(a.id, key, 1100);
    await expectCaptureMovement(b.id, key, 1200);
    // Each tenant's ledger view of the key shows its own movement only.
    const viewA = await api(a).get(`/v1/ledger?idempotencyKey=${encodeURIComponent(key)}`);
    expect((viewA.body.data as { paymentId: string }[]).map((e) => e.paymentId)).toEqual([fromA.body.id, fromA.body.id]);
  });
});

describe("payments over tRPC", () => {
  it("create, then replay: the same output, one payment and one charge; a REST retry with the key replays it too", async () => {
    const tenant = await newTenant("trpc-create");
    const key = newKey("trpc");
    const first = await (await trpcAs(tenant, key)).payments.create({ amount: "42.00", currency: "EUR", destination: "acct_test_trpc" });
    expect(first).toMatchObject({ status: "succeeded", amount: "42.00", destination: "acct_test_trpc", amountRefunded: "0.00" });
    const second = await (await trpcAs(tenant, key)).payments.create({ amount: "42.00", currency: "EUR", destination: "acct_test_trpc" });
    expect(second).toEqual(first);
    const rest = await pay(tenant, key, { amount: "42.00", destination: "acct_test_trpc" });
    expect(rest.status).toBe(201);
    expect(rest.headers.get("idempotent-replayed")).toBe("true");
    expect(rest.body).toEqual(first);
    expect((await paymentsForKey(tenant.id, key)).map((p) => p.id)).toEqual([first.id]);
    expect(await chargesFor(first.id)).toHaveLength(1);
    await expectCaptureMovement(tenant.id, key, 4200);
  });

  it("a mismatch is UNPROCESSABLE_CONTENT, a missing key BAD_REQUEST, a decline PAYMENT_REQUIRED (replayed)", async () => {
    const tenant = await newTenant("trpc-errors");
    const key = newKey("trpc");
    await (await trpcAs(tenant, key)).payments.create({ amount: "5.00", currency: "EUR", destination: "acct_test_trpc" });
    const mismatch = await trpcError(
      (await trpcAs(tenant, key)).payments.create({ amount: "6.00", currency: "EUR", destination: "acct_test_trpc" }),
    );
    expect(mismatch.code).toBe("UNPROCESSABLE_CONTENT");
    const noKey = app.createCaller(await app.createContextInner({ tenant, headers: new Headers() }));
    expect((await trpcError(noKey.payments.create({ amount: "5.00", currency: "EUR", destination: "acct_test_trpc" }))).code).toBe(
      "BAD_REQUEST",
    );
    const declineKey = newKey("trpc-decline");
    const declined = await trpcError(
      (await trpcAs(tenant, declineKey)).payments.create({ amount: "5.00", currency: "EUR", destination: "acct_test_decline" }),
    );
    expect(declined.code).toBe("PAYMENT_REQUIRED");
    const replayed = await trpcError(
      (await trpcAs(tenant, declineKey)).payments.create({ amount: "5.00", currency: "EUR", destination: "acct_test_decline" }),
    );
    expect(replayed.code).toBe("PAYMENT_REQUIRED");
    expect(replayed.message).toBe(declined.message);
    expect(await paymentsOfTenant(tenant.id)).toHaveLength(2);
    expect(await ledgerFor(tenant.id, declineKey)).toHaveLength(0);
  });
});

describe("reading payments", () => {
  it("GET /v1/payments?limit=N: newest first, at most N", async () => {
    const tenant = await newTenant("pay-list");
    const ids: string[] = [];
    for (const amount of ["1.00", "2.00", "3.00"]) ids.push((await pay(tenant, newKey("list"), { amount })).body.id as string);
    const two = await api(tenant).get("/v1/payments?limit=2");
    expect(two.status).toBe(200);
    expect((two.body.data as { id: string }[]).map((p) => p.id)).toEqual([ids[2], ids[1]]);
    const all = await api(tenant).get("/v1/payments?limit=10");
    expect((all.body.data as { id: string; amount: string }[]).map((p) => [p.id, p.amount])).toEqual([
      [ids[2], "3.00"],
      [ids[1], "2.00"],
      [ids[0], "1.00"],
    ]);
    expectFieldError(await api(tenant).get("/v1/payments?limit=0"), "limit");
  });

  it("an unknown id and another tenant's id are both 404 on GET, capture, void and refunds; the other tenant's payment is untouched", async () => {
    const [owner, other] = await Promise.all([newTenant("pay-owner"), newTenant("pay-other")]);
    const auth = await newPayment(owner, "25.00", false);
    const paid = await newPayment(owner);
    for (const id of ["pay_doesnotexist0000000", auth.id]) {
      const got = await api(other).get(`/v1/payments/${id}`);
      expectProblem(got, 404, "not-found");
      expect(got.body).not.toHaveProperty("amount");
      expectProblem(await api(other).post(`/v1/payments/${id}/capture`, {}, newKey("x-capture")), 404, "not-found");
      expectProblem(await api(other).post(`/v1/payments/${id}/void`, {}, newKey("x-void")), 404, "not-found");
    }
    for (const id of ["pay_doesnotexist0000000", paid.id]) {
      expectProblem(await api(other).post(`/v1/payments/${id}/refunds`, { amount: "1.00" }, newKey("x-refund")), 404, "not-found");
    }
    expect(await paymentRow(auth.id)).toMatchObject({ status: "requires_capture", pending_action: null, amount_captured_minor: 0 });
    expect(await paymentRow(paid.id)).toMatchObject({ status: "succeeded", amount_refunded_minor: 0 });
    expect(await refundRows(paid.id)).toHaveLength(0);
    const all = await providerCharges();
    expect(await chargesFor(auth.id, all)).toEqual([expect.objectContaining({ status: "requires_capture", captured: false })]);
    expect(await chargesFor(paid.id, all)).toEqual([expect.objectContaining({ status: "succeeded", amountRefunded: 0, refunds: [] })]);
    expect(await ledgerWhere({ tenantId: other.id })).toHaveLength(0);
    expect(await ledgerWhere({ paymentId: auth.id })).toHaveLength(0);
    expect(await ledgerWhere({ paymentId: paid.id })).toHaveLength(2);
  });
});
