/**
 * Races on the payment side. Every race starts its requests together behind a
 * barrier, on a pool warmed beforehand (so connection set-up does not stagger
 * them), and is repeated with fresh keys and fresh accounts or payments. After
 * every repetition the side effects are checked — rows, ledger entries and the
 * provider's charges — because answers can look fine while money moved twice.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { reconcile } from "../../server/reconcile/reconcile";
import { api, barrier, ledgerFor, newKey, newTenant, unbalancedTransactions, type Answer } from "../support/api";
import {
  accountBalance,
  chargesFor,
  deliver,
  expectRefusal,
  ledgerWhere,
  newEventId,
  newPayment,
  ordersOfTenant,
  pay,
  paymentRow,
  paymentsForKey,
  providerCharges,
  refundAtProvider,
  refundRows,
  signed,
  warmPool,
} from "./support";

const REPETITIONS = 50;
const BURST = 20;

beforeAll(async () => {
  await warmPool(30);
});

/** Runs `calls` together: each waits at the barrier until all have arrived. */
async function together<T>(calls: (() => Promise<T>)[]): Promise<T[]> {
  const go = barrier(calls.length);
  return Promise.all(
    calls.map(async (call) => {
      await go();
      return call();
    }),
  );
}

/** Of two racing answers: the one with `status`, and the other; fails unless exactly one has it. */
function winnerAndLoser(answers: Answer[], status: number, context: string): { winner: Answer; loser: Answer; index: number } {
  const won = answers.map((a, i) => (a.status === status ? i : -1)).filter((i) => i >= 0);
  expect(won, `${context}: ${answers.map((a) => `${a.status} ${a.text}`).join(" | ")}`).toHaveLength(1);
  const index = won[0]!;
  return { winner: answers[index]!, loser: answers[1 - index]!, index };
}

describe(`races, each repeated ${REPETITIONS} times`, () => {
  it(`(a) ${BURST} same-key payment requests at once: one payment, one charge, one movement, identical answers`, async () => {
    const tenant = await newTenant("race-burst");
    for (let i = 0; i < REPETITIONS; i++) {
      const key = newKey(`burst${i}`);
      const answers = await together(Array.from({ length: BURST }, () => () => pay(tenant, key)));
      const context = `repetition ${i}, key ${key}`;
      expect(
        answers.filter((a) => a.status !== 201 && a.status !== 409).map((a) => a.text),
        context,
      ).toEqual([]);
      const ok = answers.filter((a) => a.status === 201);
      expect(ok.length, context).toBeGreaterThan(0);
      expect(new Set(ok.map((a) => a.text)).size, context).toBe(1);
      expect(
        ok.filter((a) => a.headers.get("idempotent-replayed") !== "true"),
        context,
      ).toHaveLength(1);
      const rows = await paymentsForKey(tenant.id, key);
      expect(
        rows.map((r) => r.id),
        context,
      ).toEqual([ok[0]!.body.id]);
      expect(rows[0]!.status, context).toBe("succeeded");
      expect(await chargesFor(rows[0]!.id), context).toEqual([expect.objectContaining({ id: rows[0]!.psp_charge_id, amount: 2500 })]);
      const entries = await ledgerFor(tenant.id, key);
      expect(entries, context).toHaveLength(2);
      expect(new Set(entries.map((e) => e.transaction_id)).size, context).toBe(1);
    }
    expect(await unbalancedTransactions(tenant.id)).toHaveLength(0);
  });

  it("(b) two withdrawals of 80.00 from 100.00 with distinct keys: one succeeds, the other is refused; 20.00 left, one withdrawal booked", async () => {
    const tenant = await newTenant("race-withdraw");
    for (let i = 0; i < REPETITIONS; i++) {
      const account = await api(tenant).post("/v1/accounts", { currency: "EUR" }, newKey("acct"));
      const id = account.body.id as string;
      expect((await api(tenant).post(`/v1/accounts/${id}/deposits`, { amount: "100.00", currency: "EUR" }, newKey("deposit"))).status).toBe(
        201,
      );
      const keys = [newKey("withdraw"), newKey("withdraw")];
      const answers = await together(
        keys.map((k) => () => api(tenant).post(`/v1/accounts/${id}/withdrawals`, { amount: "80.00", currency: "EUR" }, k)),
      );
      const context = `repetition ${i}, account ${id}`;
      const { winner, loser, index } = winnerAndLoser(answers, 201, context);
      expect(winner.body, context).toMatchObject({ type: "withdrawal", balance: "20.00" });
      expectRefusal(loser);
      expect(loser.body.type, context).toBe("/problems/insufficient-funds");
      expect(await accountBalance(id), context).toBe(2000);
      expect((await api(tenant).get(`/v1/accounts/${id}`)).body.balance, context).toBe("20.00");
      // A withdrawal is the one movement that debits the customer's balance.
      const withdrawals = (await ledgerWhere({ accountId: id })).filter(
        (e) => e.ledger_account === `customer_balance:${id}` && e.direction === "debit",
      );
      expect(
        withdrawals.map((e) => [e.amount_minor, e.idempotency_key]),
        context,
      ).toEqual([[8000, keys[index]]]);
      expect(await ledgerFor(tenant.id, keys[1 - index]!), context).toHaveLength(0);
    }
    expect(await unbalancedTransactions(tenant.id)).toHaveLength(0);
  });

  it("(c) two refunds of 30.00 on a 50.00 payment: one succeeds, the other is refused; one refund here and at the provider", async () => {
    const tenant = await newTenant("race-refund");
    for (let i = 0; i < REPETITIONS; i++) {
      const paid = await newPayment(tenant, "50.00");
      const keys = [newKey("refund"), newKey("refund")];
      const answers = await together(keys.map((k) => () => api(tenant).post(`/v1/payments/${paid.id}/refunds`, { amount: "30.00" }, k)));
      const context = `repetition ${i}, payment ${paid.id}`;
      const { winner, loser, index } = winnerAndLoser(answers, 201, context);
      expect(winner.body, context).toMatchObject({ paymentId: paid.id, amount: "30.00", status: "succeeded" });
      expectRefusal(loser);
      expect((await api(tenant).get(`/v1/payments/${paid.id}`)).body.amountRefunded, context).toBe("30.00");
      expect(
        (await refundRows(paid.id)).map((r) => [r.amount_minor, r.status, r.idempotency_key]),
        context,
      ).toEqual([[3000, "succeeded", keys[index]]]);
      const [charge] = await chargesFor(paid.id);
      expect(
        charge?.refunds.map((r) => r.amount),
        context,
      ).toEqual([3000]);
      expect(charge?.amountRefunded, context).toBe(3000);
      const refundsBooked = (await ledgerWhere({ paymentId: paid.id })).filter((e) => e.ledger_account === "refunds");
      expect(
        refundsBooked.map((e) => [e.direction, e.amount_minor, e.idempotency_key]),
        context,
      ).toEqual([["debit", 3000, keys[index]]]);
    }
    expect(await unbalancedTransactions(tenant.id)).toHaveLength(0);
  });

  it("(d) capture against void of one authorisation: exactly one wins, the other is refused; app and provider agree on the winner", async () => {
    const tenant = await newTenant("race-capture-void");
    for (let i = 0; i < REPETITIONS; i++) {
      const auth = await newPayment(tenant, "25.00", false);
      const captureKey = newKey("capture");
      const voidKey = newKey("void");
      const answers = await together([
        () => api(tenant).post(`/v1/payments/${auth.id}/capture`, {}, captureKey),
        () => api(tenant).post(`/v1/payments/${auth.id}/void`, {}, voidKey),
      ]);
      const context = `repetition ${i}, payment ${auth.id}`;
      const { winner, loser, index } = winnerAndLoser(answers, 200, context);
      expectRefusal(loser);
      const captureWon = index === 0;
      const status = captureWon ? "succeeded" : "canceled";
      expect(winner.body.status, context).toBe(status);
      expect(await paymentRow(auth.id), context).toMatchObject({
        status,
        pending_action: null,
        amount_captured_minor: captureWon ? 2500 : 0,
      });
      expect(await chargesFor(auth.id), context).toEqual([expect.objectContaining({ status, captured: captureWon })]);
      expect(await ledgerWhere({ paymentId: auth.id }), context).toHaveLength(captureWon ? 2 : 0);
      expect(await ledgerFor(tenant.id, voidKey), context).toHaveLength(0);
    }
    expect(await unbalancedTransactions(tenant.id)).toHaveLength(0);
  });

  it("(e) one coupon in two orders at once: one order, one payment, one charge; the other order is refused", async () => {
    const tenant = await newTenant("race-coupon");
    const cart = [{ sku: "tee-retry", quantity: 1 }];
    for (let i = 0; i < REPETITIONS; i++) {
      const code = `RACE${i}_${crypto.randomUUID().slice(0, 8)}`;
      expect((await api(tenant).post("/v1/coupons", { code, percentOff: 20 }, newKey("coupon"))).status).toBe(201);
      const keys = [newKey("order"), newKey("order")];
      const answers = await together(keys.map((k) => () => api(tenant).post("/v1/orders", { items: cart, couponCode: code }, k)));
      const context = `repetition ${i}, coupon ${code}`;
      const { winner, loser, index } = winnerAndLoser(answers, 201, context);
      expect(winner.body, context).toMatchObject({ status: "paid", total: "20.00", couponCode: code });
      expectRefusal(loser);
      expect(loser.body.type, context).toBe("/problems/coupon-redeemed");
      const orders = (await ordersOfTenant(tenant.id)).filter((o) => o.coupon_code === code);
      expect(
        orders.map((o) => o.id),
        context,
      ).toEqual([winner.body.id]);
      const won = await paymentsForKey(tenant.id, keys[index]!);
      expect(
        won.map((p) => p.id),
        context,
      ).toEqual([orders[0]!.payment_id]);
      expect(await paymentsForKey(tenant.id, keys[1 - index]!), context).toHaveLength(0);
      expect(await chargesFor(won[0]!.id), context).toEqual([expect.objectContaining({ amount: 2000 })]);
      expect(await ledgerFor(tenant.id, keys[1 - index]!), context).toHaveLength(0);
    }
  });

  it("(f) one provider event delivered 5 times at once: all 200, one refund, one movement; the ledger matches the provider", async () => {
    const tenant = await newTenant("race-webhook");
    for (let i = 0; i < REPETITIONS; i++) {
      const paid = await newPayment(tenant, "50.00");
      // The merchant refunds at the provider, which then tells us about it.
      await refundAtProvider(paid.chargeId, 2000, newKey("psp-refund"));
      const eventId = newEventId();
      const { raw, signature } = signed({ id: eventId, type: "charge.refunded", data: { paymentId: paid.id, amount: "20.00" } });
      const answers = await together(Array.from({ length: 5 }, () => () => deliver(raw, signature)));
      const context = `repetition ${i}, event ${eventId}`;
      expect(
        answers.map((a) => a.status),
        context,
      ).toEqual([200, 200, 200, 200, 200]);
      expect(
        answers.filter((a) => a.body.duplicate === false),
        context,
      ).toHaveLength(1);
      expect(
        (await refundRows(paid.id)).map((r) => [r.amount_minor, r.event_id]),
        context,
      ).toEqual([[2000, eventId]]);
      const movement = await ledgerWhere({ eventId });
      expect(movement, context).toHaveLength(2);
      expect(new Set(movement.map((e) => e.transaction_id)).size, context).toBe(1);
      expect(await paymentRow(paid.id), context).toMatchObject({ amount_refunded_minor: 2000 });
      expect((await chargesFor(paid.id))[0]?.amountRefunded, context).toBe(2000);
    }
    expect(await reconcile(database().db, await providerCharges(), { tenantId: tenant.id })).toEqual([]);
  });
});
