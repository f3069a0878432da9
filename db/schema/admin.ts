/**
 * What operators did from the admin dashboard: every recover and purge, with
 * what it touched, so the dashboard can show who changed what and when.
 */
import { sql } from "drizzle-orm";
import { bigserial, boolean, index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

export const OperatorRole = {
  /** Reads everything the dashboard shows. */
  Viewer: "viewer",
  /** Also resumes, recovers and purges keys. */
  Operator: "operator",
} as const;
export type OperatorRole = (typeof OperatorRole)[keyof typeof OperatorRole];

/**
 * The people who sign in to /admin, each with a role and a scrypt hash of
 * their password (server/admin/operators.ts). `demo` marks the one operator
 * demo mode creates with the documented demo password; it counts only while
 * demo mode is on.
 */
export const adminOperators = pgTable("admin_operators", {
  name: text("name").primaryKey(),
  role: text("role").$type<OperatorRole>().notNull(),
  passwordHash: text("password_hash").notNull(),
  demo: boolean("demo").notNull().default(false),
  createdAt: timestamp("created_at", { withTimezone: true, mode: "date" })
    .notNull()
    .default(sql`now()`),
});

export const AdminAction = {
  Recover: "recover",
  PurgeExpired: "purge_expired",
  /** "Resume now": the completer run for one key at an operator's request. */
  Resume: "resume",
} as const;
export type AdminAction = (typeof AdminAction)[keyof typeof AdminAction];

export const adminAuditLog = pgTable(
  "admin_audit_log",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    action: text("action").$type<AdminAction>().notNull(),
    /** Which sign-in did it. */
    sessionId: text("session_id").notNull(),
    /** Who did it (null on entries from before operator accounts). */
    operator: text("operator"),
    /** The key acted on; null for actions over many keys. */
    tenantId: text("tenant_id"),
    key: text("key"),
    /** What the action found and changed (the old lease, how many rows were deleted). */
    detail: jsonb("detail").$type<Record<string, unknown>>().notNull().default({}),
    at: timestamp("at", { withTimezone: true, mode: "date" })
      .notNull()
      .default(sql`now()`),
  },
  (t) => [index("admin_audit_log_at_idx").on(t.at)],
);

/**
 * Signed-in admin sessions. The cookie is signed and carries its expiry, but
 * only a row here makes it count: sign-out deletes the row, so a copied
 * cookie stops working at once, on every instance.
 */
export const adminSessions = pgTable(
  "admin_sessions",
  {
    id: text("id").primaryKey(),
    /** Whose session; removing the operator ends it. Null rows (from before operator accounts) never count. */
    operator: text("operator").references(() => adminOperators.name, { onDelete: "cascade" }),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" })
      .notNull()
      .default(sql`now()`),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("admin_sessions_expires_at_idx").on(t.expiresAt), index("admin_sessions_operator_idx").on(t.operator)],
);

/** Sign-in attempt counters (rate-limiter-flexible's Drizzle store: these three columns, these names). */
export const adminSignInLimits = pgTable("admin_sign_in_limits", {
  key: text("key").primaryKey(),
  points: integer("points").notNull(),
  expire: timestamp("expire", { withTimezone: true, mode: "date" }),
});

/** The per-tenant request budget's counters (rate-limiter-flexible's Drizzle store), shared by every instance. */
export const tenantRequestLimits = pgTable("tenant_request_limits", {
  key: text("key").primaryKey(),
  points: integer("points").notNull(),
  expire: timestamp("expire", { withTimezone: true, mode: "date" }),
});
