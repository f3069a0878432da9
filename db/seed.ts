/** The demo data: idempotent, so every start can run it. */
import { sql } from "drizzle-orm";
import type { Db } from "./client";
import { products, tenants } from "./schema";

export const DEMO_TENANT = { id: "ten_demo", name: "Demo Shop" } as const;

export const CATALOG = [
  {
    sku: "sticker-pack",
    name: "Sticker pack",
    description: "Six vinyl stickers: 202, 409, 422, 201, 402 and a retry arrow.",
    priceMinor: 450,
    currency: "EUR",
  },
  {
    sku: "mug-once",
    name: "Mug “Exactly once”",
    description: "Holds one coffee. Refills are idempotent.",
    priceMinor: 1500,
    currency: "EUR",
  },
  {
    sku: "tee-retry",
    name: "T-shirt “Retry safely”",
    description: "Organic cotton; survives any number of washes with the same key.",
    priceMinor: 2500,
    currency: "EUR",
  },
  {
    sku: "hoodie-ledger",
    name: "Hoodie “Double entry”",
    description: "Every thread balanced by another.",
    priceMinor: 5900,
    currency: "EUR",
  },
  {
    sku: "book-idempotency",
    name: "Field guide to idempotency keys",
    description: "Claims, leases, fences and replays, with diagrams.",
    priceMinor: 3400,
    currency: "EUR",
  },
] as const;

export async function seedDemo(db: Db): Promise<void> {
  await db.insert(tenants).values(DEMO_TENANT).onConflictDoNothing();
  await db
    .insert(products)
    .values([...CATALOG])
    .onConflictDoUpdate({
      target: products.sku,
      set: {
        name: sql`excluded.name`,
        description: sql`excluded.description`,
        priceMinor: sql`excluded.price_minor`,
        currency: sql`excluded.currency`,
      },
    });
}
