/** Coupons and orders: totals, a single-use coupon, unknown SKUs, the order's payment. */
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { api, ledgerFor, newKey, newTenant } from "../support/api";
import {
  chargesFor,
  expectCaptureMovement,
  expectFieldError,
  expectProblem,
  expectRefusal,
  ledgerWhere,
  ordersOfTenant,
  paymentRow,
  paymentsForKey,
  paymentsOfTenant,
  providerCharges,
} from "./support";

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
    expect(order.body).toMatchObject({
      id: expect.stringMatching(/^ord_/),
      status: "paid",
      subtotal: "34.50",
      discount: "3.45",
      total: "31.05",
      currency: "EUR",
      couponCode: code,
    });
    const payment = order.body.payment as { id: string; status: string; amount: string };
    expect(payment).toMatchObject({ status: "succeeded", amount: "31.05" });
    const got = await api(tenant).get(`/v1/orders/${order.body.id as string}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(order.body);
    expect(await ordersOfTenant(tenant.id)).toEqual([
      expect.objectContaining({ id: order.body.id, status: "paid", payment_id: payment.id, coupon_code: code, total_minor: 3105 }),
    ]);
    expect(await chargesFor(payment.id)).toEqual([expect.objectContaining({ amount: 3105, captured: true })]);
    await expectCaptureMovement(tenant.id, key, 3105);
    // The movement names both what was sold and how it was paid.
    expect(
      (await ledgerWhere({ tenantId: tenant.id, key })).every((e) => e.order_id === order.body.id && e.payment_id === payment.id),
    ).toBe(true);
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
    const [coupon] = await database().sql<
      { redeemed_order_id: string | null }[]
    >`select redeemed_order_id from coupons where tenant_id = ${tenant.id} and code = ${code}`;
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
