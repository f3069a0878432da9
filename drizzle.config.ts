/**
 * drizzle-kit for the app's own tables (db/schema). The idempotency key table
 * is the package's (@exactly-once/trpc creates it with its own migrations),
 * but the app's migrations 0000–0010 created it before the package existed:
 * drizzle-kit reads the package's table definition too, so its snapshot
 * keeps matching and it never generates the table (or its drop) again. A
 * column the package adds later gets an app migration as well, written
 * `if not exists` like the package's own (0012, the trace id), so the two
 * histories agree whichever runs first.
 */
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: ["./db/schema/index.ts", "./packages/trpc/src/schema.ts"],
  out: "./db/migrations",
  dbCredentials: { url: process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres" },
  strict: true,
});
