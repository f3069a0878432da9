/**
 * Sequential semantics of the payment-side endpoints over REST (and create /
 * replay over tRPC): one request at a time, each answer checked against what
 * it left behind — the payment, account and order rows, the ledger entries
 * tagged with the key, and the charges the provider holds for the payment.
 */
import { TRPCError } from "@trpc/server";
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { createContextInner } from "../../server/context";
import { reconcile } from "../../server/reconcile/reconcile";
import { createCaller } from "../../server/root";
import { api, ledgerFor, newKey, newTenant, unbalancedTransactions, type Answer, type Tenant } from "../support/api";
import {
  accountBalance,
  chargesFor,
  deliver,
  expectCaptureMovement,
  expectFieldError,
  expectProblem,
  expectRefusal,
  keyRow,
  ledgerWhere,
  newEventId,
  newPayment,
  ordersOfTenant,
  pay,
  PAYMENT,
  paymentRow,
  paymentsForKey,
  paymentsOfTenant,
  providerCharges,
  refundAtProvider,
  refundRows,
  signed,
} from "./support";

async function trpcAs(tenant: Tenant, key: string) {
  return createCaller(await createContextInner({ tenant, headers: new Headers({ "Idempotency-Key": key }) }));
}

async function trpcError(promise: Promise<unknown>): Promise<TRPCError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TRPCError);
  return error as TRPCError;
}

describe("POST /v1/payments", () => {
  it("201 once, then replays status and exact bytes with Idempotent-Replayed; one payment, one charge, one movement", async () => {
    const tenant = await newTenant("pay-replay");
    const key = newKey("pay");
    const first = await pay(tenant, key);
    expect(first.status, first.text).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(first.body).toMatchObject({ id: expect.stringMatching(/^pay_/), status: "succeeded", ...PAYMENT, amountRefunded: "0.00", createdAt: expect.any(String) });
    for (let i = 0; i < 2; i++) {
      const again = await pay(tenant, key);
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.text).toBe(first.text);
    }
    const id = first.body.id as string;
    const rows = await paymentsForKey(tenant.id, key);
    expect(rows).toEqual([expect.objectContaining({ id, status: "succeeded", amount_minor: 2500, amount_captured_minor: 2500, amount_refunded_minor: 0 })]);
    const charges = await chargesFor(id);
    expect(charges).toEqual([expect.objectContaining({ id: rows[0]!.psp_charge_id, amount: 2500, currency: "EUR", destination: PAYMENT.destination, captured: true, status: "succeeded" })]);
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
    const marked = (await providerCharges()).filter((c) => c.destination === destination || (c.amount === amountMinor && Date.parse(c.createdAt) >= since - 1000));
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
    const mismatch = await trpcError((await trpcAs(tenant, key)).payments.create({ amount: "6.00", currency: "EUR", destination: "acct_test_trpc" }));
    expect(mismatch.code).toBe("UNPROCESSABLE_CONTENT");
    const noKey = createCaller(await createContextInner({ tenant, headers: new Headers() }));
    expect((await trpcError(noKey.payments.create({ amount: "5.00", currency: "EUR", destination: "acct_test_trpc" }))).code).toBe("BAD_REQUEST");
    const declineKey = newKey("trpc-decline");
    const declined = await trpcError((await trpcAs(tenant, declineKey)).payments.create({ amount: "5.00", currency: "EUR", destination: "acct_test_decline" }));
    expect(declined.code).toBe("PAYMENT_REQUIRED");
    const replayed = await trpcError((await trpcAs(tenant, declineKey)).payments.create({ amount: "5.00", currency: "EUR", destination: "acct_test_decline" }));
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

describe("capture and void", () => {
  it("capture: false authorises only; capture books it once; a second capture and a void are refused (4xx, not 409)", async () => {
    const tenant = await newTenant("capture");
    const auth = await newPayment(tenant, "25.00", false);
    expect(await paymentRow(auth.id)).toMatchObject({ status: "requires_capture", amount_captured_minor: 0 });
    expect(await ledgerFor(tenant.id, auth.key)).toHaveLength(0);
    expect(await chargesFor(auth.id)).toEqual([expect.objectContaining({ id: auth.chargeId, status: "requires_capture", captured: false })]);

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
    expect(r1.body).toMatchObject({ id: expect.stringMatching(/^re_/), paymentId: paid.id, amount: "20.00", currency: "EUR", status: "succeeded" });
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

describe("accounts", () => {
  it("create, deposit, withdraw, get: balances and the ledger move together", async () => {
    const tenant = await newTenant("accounts");
    const created = await api(tenant).post("/v1/accounts", { currency: "EUR" }, newKey("acct"));
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ id: expect.stringMatching(/^acct_/), balance: "0.00", currency: "EUR" });
    const id = created.body.id as string;
    const dk = newKey("deposit");
    const deposit = await api(tenant).post(`/v1/accounts/${id}/deposits`, { amount: "100.00", currency: "EUR" }, dk);
    expect(deposit.status, deposit.text).toBe(201);
    expect(deposit.body).toMatchObject({ type: "deposit", accountId: id, amount: "100.00", balance: "100.00" });
    expect((await api(tenant).post(`/v1/accounts/${id}/deposits`, { amount: "100.00", currency: "EUR" }, dk)).text).toBe(deposit.text);
    const wk = newKey("withdraw");
    const withdrawal = await api(tenant).post(`/v1/accounts/${id}/withdrawals`, { amount: "30.00", currency: "EUR" }, wk);
    expect(withdrawal.status, withdrawal.text).toBe(201);
    expect(withdrawal.body).toMatchObject({ type: "withdrawal", amount: "30.00", balance: "70.00" });
    const got = await api(tenant).get(`/v1/accounts/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id, balance: "70.00", currency: "EUR" });
    expect(await accountBalance(id)).toBe(7000);
    const book = `customer_balance:${id}`;
    expect((await ledgerFor(tenant.id, dk)).map((e) => [e.ledger_account, e.direction, Number(e.amount_minor)])).toEqual(
      expect.arrayContaining([
        ["cash", "debit", 10000],
        [book, "credit", 10000],
      ]),
    );
    expect((await ledgerFor(tenant.id, wk)).map((e) => [e.ledger_account, e.direction, Number(e.amount_minor)])).toEqual(
      expect.arrayContaining([
        [book, "debit", 3000],
        ["cash", "credit", 3000],
      ]),
    );
    expect(await ledgerWhere({ accountId: id })).toHaveLength(4);
  });

  it("a currency mismatch and an overdraw are refused (4xx, not 409), stored and replayed; the balance is unchanged", async () => {
    const tenant = await newTenant("accounts-refused");
    const id = (await api(tenant).post("/v1/accounts", { currency: "EUR" }, newKey("acct"))).body.id as string;
    await api(tenant).post(`/v1/accounts/${id}/deposits`, { amount: "50.00", currency: "EUR" }, newKey("deposit"));
    const usd = newKey("usd");
    const mismatch = await api(tenant).post(`/v1/accounts/${id}/deposits`, { amount: "5.00", currency: "USD" }, usd);
    expectRefusal(mismatch);
    expect((mismatch.body.errors as { field: string }[]).map((e) => e.field)).toContain("currency");
    const overKey = newKey("overdraw");
    const overdraw = await api(tenant).post(`/v1/accounts/${id}/withdrawals`, { amount: "50.01", currency: "EUR" }, overKey);
    expectRefusal(overdraw);
    const replay = await api(tenant).post(`/v1/accounts/${id}/withdrawals`, { amount: "50.01", currency: "EUR" }, overKey);
    expect(replay.status).toBe(overdraw.status);
    expect(replay.text).toBe(overdraw.text);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await accountBalance(id)).toBe(5000);
    expect((await api(tenant).get(`/v1/accounts/${id}`)).body).toMatchObject({ balance: "50.00" });
    expect([...(await ledgerFor(tenant.id, usd)), ...(await ledgerFor(tenant.id, overKey))]).toHaveLength(0);
    expect(await ledgerWhere({ accountId: id })).toHaveLength(2);
  });

  it("another tenant's account is 404 for reads and writes, and its balance is untouched", async () => {
    const [owner, other] = await Promise.all([newTenant("acct-owner"), newTenant("acct-other")]);
    const id = (await api(owner).post("/v1/accounts", { currency: "EUR" }, newKey("acct"))).body.id as string;
    await api(owner).post(`/v1/accounts/${id}/deposits`, { amount: "10.00", currency: "EUR" }, newKey("deposit"));
    expectProblem(await api(other).get(`/v1/accounts/${id}`), 404, "not-found");
    expectProblem(await api(other).post(`/v1/accounts/${id}/withdrawals`, { amount: "1.00", currency: "EUR" }, newKey("steal")), 404, "not-found");
    expectProblem(await api(other).post(`/v1/accounts/${id}/deposits`, { amount: "1.00", currency: "EUR" }, newKey("gift")), 404, "not-found");
    expect(await accountBalance(id)).toBe(1000);
    expect(await ledgerWhere({ tenantId: other.id })).toHaveLength(0);
  });
});

describe("coupons and orders", () => {
  const cart = [
    { sku: "mug-once", quantity: 2 },
    { sku: "sticker-pack", quantity: 1 },
  ];

  it("an order with a percent coupon: totals, one paid payment, its charge and movement; GET returns it", async () => {
    const tenant = await newTenant("orders");
    const code = `TEN${crypto.randomUUID().slice(0, 8)}`;
    const coupon = await api(tenant).post("/v1/coupons", { code, percentOff: 10 }, newKey("coupon"));
    expect(coupon.status, coupon.text).toBe(201);
    expect(coupon.body).toEqual({ code, percentOff: 10, redeemed: false });
    const key = newKey("order");
    const order = await api(tenant).post("/v1/orders", { items: cart, couponCode: code }, key);
    expect(order.status, order.text).toBe(201);
    // 2 × 15.00 + 4.50 = 34.50; 10 % off is 3.45.
    expect(order.body).toMatchObject({ id: expect.stringMatching(/^ord_/), status: "paid", subtotal: "34.50", discount: "3.45", total: "31.05", currency: "EUR", couponCode: code });
    const payment = order.body.payment as { id: string; status: string; amount: string };
    expect(payment).toMatchObject({ status: "succeeded", amount: "31.05" });
    const got = await api(tenant).get(`/v1/orders/${order.body.id as string}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(order.body);
    expect(await ordersOfTenant(tenant.id)).toEqual([expect.objectContaining({ id: order.body.id, status: "paid", payment_id: payment.id, coupon_code: code, total_minor: 3105 })]);
    expect(await chargesFor(payment.id)).toEqual([expect.objectContaining({ amount: 3105, captured: true })]);
    await expectCaptureMovement(tenant.id, key, 3105);
    // The movement names both what was sold and how it was paid.
    expect((await ledgerWhere({ tenantId: tenant.id, key })).every((e) => e.order_id === order.body.id && e.payment_id === payment.id)).toBe(true);
  });

  it("a coupon used twice: the second order is refused (4xx, not 409), with no second order, payment or charge", async () => {
    const tenant = await newTenant("orders-coupon");
    const code = `ONCE${crypto.randomUUID().slice(0, 8)}`;
    await api(tenant).post("/v1/coupons", { code, percentOff: 50 }, newKey("coupon"));
    const first = await api(tenant).post("/v1/orders", { items: cart, couponCode: code }, newKey("order"));
    expect(first.status, first.text).toBe(201);
    const secondKey = newKey("order");
    const second = await api(tenant).post("/v1/orders", { items: cart, couponCode: code }, secondKey);
    expectRefusal(second);
    expect(second.body.type).toBe("/problems/coupon-redeemed");
    expect(await ordersOfTenant(tenant.id)).toHaveLength(1);
    expect(await paymentsOfTenant(tenant.id)).toHaveLength(1);
    expect(await paymentsForKey(tenant.id, secondKey)).toHaveLength(0);
    expect(await ledgerFor(tenant.id, secondKey)).toHaveLength(0);
    const ids = new Set((await paymentsOfTenant(tenant.id)).map((p) => p.id));
    expect((await providerCharges()).filter((c) => ids.has(c.reference ?? ""))).toHaveLength(1);
  });

  it("a declined order: 402, the order payment_failed, nothing charged or booked, and its coupon free for the next order", async () => {
    const tenant = await newTenant("orders-declined");
    const code = `BACK${crypto.randomUUID().slice(0, 8)}`;
    await api(tenant).post("/v1/coupons", { code, percentOff: 10 }, newKey("coupon"));
    const key = newKey("order");
    const declined = await api(tenant).post("/v1/orders", { items: cart, couponCode: code, destination: "acct_test_decline" }, key);
    expectProblem(declined, 402, "payment-declined");
    const [order] = await ordersOfTenant(tenant.id);
    expect(order).toMatchObject({ id: declined.body.orderId, status: "payment_failed", payment_id: declined.body.paymentId });
    expect(await paymentRow(order!.payment_id!)).toMatchObject({ status: "failed" });
    expect(await chargesFor(order!.payment_id!)).toHaveLength(0);
    expect(await ledgerFor(tenant.id, key)).toHaveLength(0);
    const next = await api(tenant).post("/v1/orders", { items: cart, couponCode: code }, newKey("order"));
    expect(next.status, next.text).toBe(201);
    expect(next.body).toMatchObject({ status: "paid", discount: "3.45", couponCode: code });
  });

  it("an unknown SKU is a 400 naming items.0.sku; no order, payment or coupon redemption", async () => {
    const tenant = await newTenant("orders-sku");
    const code = `SKU${crypto.randomUUID().slice(0, 8)}`;
    await api(tenant).post("/v1/coupons", { code, percentOff: 10 }, newKey("coupon"));
    const res = await api(tenant).post("/v1/orders", { items: [{ sku: "no-such-thing", quantity: 1 }], couponCode: code }, newKey("order"));
    expectFieldError(res, "items.0.sku");
    expect(await ordersOfTenant(tenant.id)).toHaveLength(0);
    expect(await paymentsOfTenant(tenant.id)).toHaveLength(0);
    const [coupon] = await database().sql<{ redeemed_order_id: string | null }[]>`select redeemed_order_id from coupons where tenant_id = ${tenant.id} and code = ${code}`;
    expect(coupon?.redeemed_order_id).toBeNull();
  });

  it("GET /v1/orders/{id}: unknown and another tenant's order are 404", async () => {
    const [owner, other] = await Promise.all([newTenant("order-owner"), newTenant("order-other")]);
    const order = await api(owner).post("/v1/orders", { items: [{ sku: "sticker-pack", quantity: 1 }] }, newKey("order"));
    expect(order.status).toBe(201);
    expectProblem(await api(other).get(`/v1/orders/${order.body.id as string}`), 404, "not-found");
    expectProblem(await api(owner).get("/v1/orders/ord_doesnotexist000000"), 404, "not-found");
  });
});

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
        expect(e).toMatchObject({ idempotencyKey: key, paymentId: paid.id, currency: "EUR", direction: expect.stringMatching(/^(debit|credit)$/) });
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
    expect((view.body.data as Record<string, unknown>[]).every((e) => e.eventId === eventId && e.idempotencyKey === null && e.paymentId === paid.id)).toBe(true);
  });
});
