/** The product catalog as the API and the storefront show it: cheapest first, prices formatted by server/money.ts. */
import { asc } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client";
import { products } from "../../db/schema";
import { formatMinor } from "../money";

export const productSchema = z.object({
  sku: z.string(),
  name: z.string(),
  description: z.string(),
  price: z.string(),
  currency: z.string(),
});

export const catalogSchema = z.object({ data: z.array(productSchema) });

export async function listProducts(db: Db) {
  const rows = await db
    .select({
      sku: products.sku,
      name: products.name,
      description: products.description,
      priceMinor: products.priceMinor,
      currency: products.currency,
    })
    .from(products)
    .orderBy(asc(products.priceMinor), asc(products.sku));
  return rows.map(({ priceMinor, ...p }) => ({ ...p, price: formatMinor(priceMinor) }));
}
