/** Checkout: coupons and orders (a cart of catalog items, an optional single-use coupon, one payment). */
import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { idInput, strictInput } from "../input";
import type { Db } from "../../db/client";
import type { RecoverableHandle } from "../idempotency";
import { orders, payments } from "../../db/schema";
import { NotFoundError } from "../errors";
import { formatMinor } from "../money";
import { chargeAndRecord } from "../payments/charge";
import { destinationSchema, paymentSchema, presentPayment } from "../payments/present";
import { recoverableProcedure, router, tenantProcedure } from "../trpc";
import { couponCodeSchema, createCoupon } from "./coupons";
import { placeOrder } from "./place";
import { cartItemsSchema } from "./pricing";

/** Where the demo shop's money goes when the caller names no destination. */
export const SHOP_DESTINATION = "acct_demo_shop";

export const orderSchema = z.object({
  id: z.string(),
  status: z.enum(["pending_payment", "paid", "payment_failed"]),
  items: z.array(z.object({ sku: z.string(), name: z.string(), quantity: z.number(), unitPrice: z.string(), amount: z.string() })),
  subtotal: z.string(),
  discount: z.string(),
  total: z.string(),
  currency: z.string(),
  couponCode: z.string().nullable(),
  payment: paymentSchema.nullable(),
  createdAt: z.string(),
});

export async function orderView(db: Db, tenantId: string, id: string): Promise<z.infer<typeof orderSchema>> {
  const [row] = await db
    .select()
    .from(orders)
    .leftJoin(payments, eq(payments.id, orders.paymentId))
    .where(and(eq(orders.id, id), eq(orders.tenantId, tenantId)));
  if (!row) throw new NotFoundError("order", id);
  const o = row.orders;
  return {
    id: o.id,
    status: o.status as "pending_payment" | "paid" | "payment_failed",
    items: o.items.map((i) => ({ sku: i.sku, name: i.name, quantity: i.quantity, unitPrice: formatMinor(i.unitPriceMinor), amount: formatMinor(i.unitPriceMinor * i.quantity) })),
    subtotal: formatMinor(o.subtotalMinor),
    discount: formatMinor(o.discountMinor),
    total: formatMinor(o.totalMinor),
    currency: o.currency,
    couponCode: o.couponCode,
    payment: row.payments ? presentPayment(row.payments) : null,
    createdAt: o.createdAt.toISOString(),
  };
}

export const cartSchema = strictInput({
  items: cartItemsSchema,
  couponCode: couponCodeSchema.optional(),
  /** Beyond the contract: which provider account is charged; the checkout demo uses the test destinations. */
  destination: destinationSchema.default(SHOP_DESTINATION),
});

/** Place the order, then charge it: one recoverable operation, shared by the API and the storefront. */
export async function checkout(db: Db, h: RecoverableHandle<Db>, tenantId: string, input: z.infer<typeof cartSchema>) {
  const placed = await h.phase("placed", (tx) => placeOrder(tx, tenantId, h.key, input, input.destination));
  if (placed.paymentId) {
    await chargeAndRecord(h, {
      tenantId,
      paymentId: placed.paymentId,
      orderId: placed.orderId,
      amountMinor: placed.totalMinor,
      currency: placed.currency,
      destination: input.destination,
      capture: true,
    });
  }
  return orderView(db, tenantId, placed.orderId);
}

export const couponsRouter = router({ create: createCoupon });

export const ordersRouter = router({
  create: recoverableProcedure(cartSchema, { resumable: true })
    .meta({ rest: { method: "POST", path: "/v1/orders", status: 201, summary: "Place an order and pay for it", tags: ["orders"] } })
    .output(orderSchema)
    .mutation(({ ctx, input }) => checkout(ctx.db, ctx.idempotency, ctx.tenant.id, input)),

  get: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/orders/{id}", summary: "An order with its payment", tags: ["orders"] } })
    .input(idInput)
    .output(orderSchema)
    .query(({ ctx, input }) => orderView(ctx.db, ctx.tenant.id, input.id)),
});
