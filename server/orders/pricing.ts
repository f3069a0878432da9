/**
 * A cart priced from the catalog, in minor units: the one computation behind
 * an order's amounts and the checkout page's quote, so the page shows what
 * the order will charge and never computes money itself.
 */
import { inArray } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client";
import { products, type OrderItem } from "../../db/schema";
import { InvalidFieldError, RuleViolationError } from "../errors";
import { formatMinor } from "../money";

export const cartItemsSchema = z
  .array(z.strictObject({ sku: z.string().min(1).max(64), quantity: z.number().int().min(1).max(99) }))
  .min(1, { error: "must name at least one item" })
  .max(50);

export type CartItem = z.infer<typeof cartItemsSchema>[number];
type Priced = { items: OrderItem[]; currency: string; subtotalMinor: number };

export async function priceItems(db: Db, cart: CartItem[]): Promise<Priced> {
  const skus = [...new Set(cart.map((i) => i.sku))];
  const found = await db.select().from(products).where(inArray(products.sku, skus));
  const bySku = new Map(found.map((p) => [p.sku, p]));
  const items: OrderItem[] = cart.map((line, i) => {
    const product = bySku.get(line.sku);
    if (!product) throw new InvalidFieldError(`items.${i}.sku`, `no product with the SKU ${line.sku}`);
    return { sku: product.sku, name: product.name, quantity: line.quantity, unitPriceMinor: product.priceMinor };
  });
  const currencies = new Set(found.map((p) => p.currency));
  if (currencies.size > 1) throw new RuleViolationError("mixed-currencies", "All items of an order must be priced in one currency.");
  return { items, currency: found[0]!.currency, subtotalMinor: items.reduce((s, i) => s + i.unitPriceMinor * i.quantity, 0) };
}

export const quoteSchema = z.object({
  lines: z.array(z.object({ sku: z.string(), quantity: z.number(), unitPrice: z.string(), amount: z.string() })),
  subtotal: z.string(),
  currency: z.string(),
});
export type Quote = z.infer<typeof quoteSchema>;

/** What the cart costs before any coupon, formatted for the page. */
export async function quoteOf(db: Db, cart: CartItem[]): Promise<Quote> {
  const priced = await priceItems(db, cart);
  return {
    lines: priced.items.map((i) => ({
      sku: i.sku,
      quantity: i.quantity,
      unitPrice: formatMinor(i.unitPriceMinor),
      amount: formatMinor(i.unitPriceMinor * i.quantity),
    })),
    subtotal: formatMinor(priced.subtotalMinor),
    currency: priced.currency,
  };
}
