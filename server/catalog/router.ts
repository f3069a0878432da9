/** The product catalog: the demo catalog every tenant starts with. */
import { asc } from "drizzle-orm";
import { z } from "zod";
import { strictInput } from "../input";
import { products } from "../../db/schema";
import { formatMinor } from "../money";
import { tenantProcedure, router } from "../trpc";
import type { Db } from "../../db/client";

export const productSchema = z.object({
  sku: z.string(),
  name: z.string(),
  description: z.string(),
  price: z.string(),
  currency: z.string(),
});

export async function listProducts(db: Db) {
  const rows = await db
    .select({ sku: products.sku, name: products.name, description: products.description, priceMinor: products.priceMinor, currency: products.currency })
    .from(products)
    .orderBy(asc(products.priceMinor), asc(products.sku));
  return rows.map(({ priceMinor, ...p }) => ({ ...p, price: formatMinor(priceMinor) }));
}

export const catalogRouter = router({
  list: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/products", summary: "List the product catalog", tags: ["catalog"] } })
    .input(strictInput({}).optional())
    .output(z.object({ data: z.array(productSchema) }))
    .query(async ({ ctx }) => ({ data: await listProducts(ctx.db) })),
});
