/** The demo catalog that every tenant starts with. Prices in minor units. */
import { sql } from "drizzle-orm";
import { bigint, check, pgTable, text } from "drizzle-orm/pg-core";

export const products = pgTable(
  "products",
  {
    sku: text("sku").primaryKey(),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    priceMinor: bigint("price_minor", { mode: "number" }).notNull(),
    currency: text("currency").notNull(),
  },
  (t) => [check("products_price_positive", sql`${t.priceMinor} > 0`)],
);
