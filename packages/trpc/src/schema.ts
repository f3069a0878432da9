/**
 * The idempotency record. One row per (scope, key): the claim, the request's
 * fingerprint, the lease that says who works on it, the recovery point the
 * work has reached, and the stored result that every retry replays.
 *
 * "expired" and "stale" are not stored: they follow from `expires_at` and
 * `locked_until` compared with the database clock.
 *
 * The `./drizzle` entry point, for apps whose drizzle-kit or queries want the
 * table; the package creates it itself (`migrate`, migrations/). The table
 * runs with fillfactor 80 (set there: drizzle-kit cannot declare it), so the
 * batched replay-count updates stay HOT.
 */
import { sql } from "drizzle-orm";
import { bigint, check, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import { KeyState, type CompletedBy } from "./states.js";

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    /** Whose key it is (the scope): keys are unique per tenant, never globally. */
    tenantId: text("tenant_id").notNull(),
    key: text("key").notNull(),
    procedure: text("procedure").notNull(),
    /** SHA-256 (hex) of `request`. */
    fingerprint: text("fingerprint").notNull(),
    /** The canonical form that was hashed, kept so an operator can see why two requests differ. */
    request: text("request").notNull(),
    state: text("state").$type<KeyState>().notNull().default(KeyState.InProgress),
    /** Bumped by every claim and takeover; a holder may only write while the value is its own. */
    fence: bigint("fence", { mode: "number" }).notNull().default(1),
    lockedUntil: ts("locked_until"),
    recoveryPoint: text("recovery_point").notNull().default("started"),
    recoveryData: jsonb("recovery_data"),
    responseStatus: integer("response_status"),
    /** The response body exactly as first sent, so a replay is byte for byte the same. */
    responseBody: text("response_body"),
    createdAt: ts("created_at")
      .notNull()
      .default(sql`now()`),
    updatedAt: ts("updated_at")
      .notNull()
      .default(sql`now()`),
    completedAt: ts("completed_at"),
    expiresAt: ts("expires_at").notNull(),
    replayCount: integer("replay_count").notNull().default(0),
    lastReplayedAt: ts("last_replayed_at"),
    /** How often a completer took the key up after its client went away (completion.ts). */
    completerAttempts: integer("completer_attempts").notNull().default(0),
    /** Not before this time does a completer try again (backoff); null: as soon as the lease is over. */
    completerNextAt: ts("completer_next_at"),
    /** Why the completer's last attempt did not finish the work. */
    completerError: text("completer_error"),
    /** The completer stopped trying (attempt limit, or a stored request that no longer parses): the key needs attention. */
    completerGaveUpAt: ts("completer_gave_up_at"),
    /** Who stored the result: null for the client's own request, `completer` when the server finished it alone. */
    completedBy: text("completed_by").$type<CompletedBy>(),
    /**
     * The recorded trace (W3C trace context) of the request that took the key
     * (`traceId` of the runtime): where an operator looks first. A takeover
     * keeps it; an expired key taken anew gets its new request's.
     */
    traceId: text("trace_id"),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.key] }),
    index("idempotency_keys_expires_at_idx").on(t.expiresAt),
    index("idempotency_keys_tenant_state_created_idx").on(t.tenantId, t.state, t.createdAt, t.key),
    index("idempotency_keys_state_created_idx").on(t.state, t.createdAt, t.key),
    // The completer's due-key query: only in-progress keys, in the order their leases ran out.
    index("idempotency_keys_due_idx")
      .on(t.lockedUntil)
      .where(sql`${t.state} = 'in_progress'`),
    check("idempotency_keys_state_check", sql`${t.state} in ('in_progress', 'completed', 'failed')`),
    check("idempotency_keys_result_check", sql`(${t.state} = 'in_progress') = (${t.responseStatus} is null)`),
  ],
);

export type IdempotencyRecord = typeof idempotencyKeys.$inferSelect;
