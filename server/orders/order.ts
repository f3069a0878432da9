/** An order as the API and the storefront show it, with its payment: amounts formatted by server/money.ts. */
import { and, eq } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client";
import { orders, payments } from "../../db/schema";
import { NotFoundError } from "../errors";
import { formatMinor } from "../money";
import { paymentSchema, presentPayment } from "../payments/present";

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
  createdAt: z.iso.datetime(),
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
    items: o.items.map((i) => ({
      sku: i.sku,
      name: i.name,
      quantity: i.quantity,
      unitPrice: formatMinor(i.unitPriceMinor),
      amount: formatMinor(i.unitPriceMinor * i.quantity),
    })),
    subtotal: formatMinor(o.subtotalMinor),
    discount: formatMinor(o.discountMinor),
    total: formatMinor(o.totalMinor),
    currency: o.currency,
    couponCode: o.couponCode,
    payment: row.payments ? presentPayment(row.payments) : null,
    createdAt: o.createdAt.toISOString(),
  };
}
