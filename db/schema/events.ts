/**
 * What happened to idempotency keys (claimed, replayed, conflict, mismatch,
 * takeover, ...), for the admin dashboard's timelines and counts. Written in
 * batches off the request path; an event lost in a crash costs a point on a
 * chart, never a decision (decisions live in idempotency_keys).
 */
import { sql } from "drizzle-orm";
import { bigint, bigserial, index, integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";

export const idempotencyEvents = pgTable(
  "idempotency_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    tenantId: text("tenant_id").notNull(),
    key: text("key").notNull(),
    procedure: text("procedure").notNull(),
    type: text("type").notNull(),
    fence: bigint("fence", { mode: "number" }),
    status: integer("status"),
    recoveryPoint: text("recovery_point"),
    count: integer("count"),
    /** For "waited": how long a duplicate waited for the key. */
    waitedMs: integer("waited_ms"),
    /** The recorded OpenTelemetry trace the event happened in, when tracing recorded it. */
    traceId: text("trace_id"),
    at: timestamp("at", { withTimezone: true, mode: "date" })
      .notNull()
      .default(sql`now()`),
  },
  (t) => [index("idempotency_events_key_idx").on(t.tenantId, t.key, t.at), index("idempotency_events_at_idx").on(t.at, t.type)],
);
