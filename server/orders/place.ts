/**
 * Placing an order: price the cart from the catalog, redeem the coupon, and
 * create the order and its (pending) payment, all in one phase. The coupon is
 * redeemed by a conditional UPDATE, so of two orders naming it only one can
 * have it; the other is refused (a 4xx other than 409).
 */
import { and, eq, isNull } from "drizzle-orm";
import type { Db } from "../../db/client";
import { coupons, orders, payments, PaymentStatus } from "../../db/schema";
import { RuleViolationError } from "../errors";
import { newId } from "../ids";
import { priceItems, type CartItem } from "./pricing";

export type Cart = { items: CartItem[]; couponCode?: string };
export type Placed = { orderId: string; paymentId: string | null; totalMinor: number; currency: string };

export async function placeOrder(tx: Db, tenantId: string, key: string, cart: Cart, destination: string): Promise<Placed> {
  const { items, currency, subtotalMinor: subtotal } = await priceItems(tx, cart.items);

  const orderId = newId("ord");
  let discount = 0;
  if (cart.couponCode) {
    const [redeemed] = await tx
      .update(coupons)
      .set({ redeemedOrderId: orderId, redeemedAt: new Date() })
      .where(and(eq(coupons.tenantId, tenantId), eq(coupons.code, cart.couponCode), isNull(coupons.redeemedOrderId)))
      .returning();
    if (!redeemed) {
      const [exists] = await tx
        .select()
        .from(coupons)
        .where(and(eq(coupons.tenantId, tenantId), eq(coupons.code, cart.couponCode)));
      throw exists
        ? new RuleViolationError("coupon-redeemed", `The coupon ${cart.couponCode} has already been used.`, {
            errors: [{ field: "couponCode", message: "already redeemed" }],
          })
        : new RuleViolationError("coupon-unknown", `There is no coupon ${cart.couponCode}.`, {
            errors: [{ field: "couponCode", message: "unknown" }],
          });
    }
    discount = Math.floor((subtotal * redeemed.percentOff) / 100);
  }
  const total = subtotal - discount;
  const paymentId = total > 0 ? newId("pay") : null;
  if (paymentId) {
    await tx.insert(payments).values({
      id: paymentId,
      tenantId,
      status: PaymentStatus.Pending,
      amountMinor: total,
      currency,
      destination,
      capture: "automatic",
      idempotencyKey: key,
    });
  }
  await tx.insert(orders).values({
    id: orderId,
    tenantId,
    status: paymentId ? "pending_payment" : "paid",
    items,
    subtotalMinor: subtotal,
    discountMinor: discount,
    totalMinor: total,
    currency,
    couponCode: cart.couponCode ?? null,
    paymentId,
    idempotencyKey: key,
  });
  return { orderId, paymentId, totalMinor: total, currency };
}
