/** Tenants and their API tokens. A token is stored only as its SHA-256. */
import { sql } from "drizzle-orm";
import { index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

export const tenants = pgTable("tenants", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true })
    .notNull()
    .default(sql`now()`),
});

export const apiTokens = pgTable(
  "api_tokens",
  {
    /** Hex SHA-256 of the token; the token itself is shown once and never stored. */
    tokenHash: text("token_hash").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    /** The first characters, so an operator can tell tokens apart. */
    prefix: text("prefix").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true })
      .notNull()
      .default(sql`now()`),
  },
  (t) => [index("api_tokens_tenant_idx").on(t.tenantId)],
);
