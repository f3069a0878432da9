/**
 * What operators did from the admin dashboard: every recover and purge, with
 * what it touched, so the dashboard can show who changed what and when.
 */
import { sql } from "drizzle-orm";
import { bigserial, index, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

export const AdminAction = {
  Recover: "recover",
  PurgeExpired: "purge_expired",
} as const;
export type AdminAction = (typeof AdminAction)[keyof typeof AdminAction];

export const adminAuditLog = pgTable(
  "admin_audit_log",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    action: text("action").$type<AdminAction>().notNull(),
    /** Which sign-in did it: the session's id, not a person (there is one shared admin password). */
    sessionId: text("session_id").notNull(),
    /** The key acted on; null for actions over many keys. */
    tenantId: text("tenant_id"),
    key: text("key"),
    /** What the action found and changed (the old lease, how many rows were deleted). */
    detail: jsonb("detail").$type<Record<string, unknown>>().notNull().default({}),
    at: timestamp("at", { withTimezone: true, mode: "date" }).notNull().default(sql`now()`),
  },
  (t) => [index("admin_audit_log_at_idx").on(t.at)],
);
