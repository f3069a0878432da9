/**
 * The failure lab's runs (demo mode only): what a run armed and the steps
 * its requests recorded. In the database, not in one process's memory, so a
 * run started through one app instance can be played and read through any
 * other behind the same load balancer.
 */
import { sql } from "drizzle-orm";
import { bigserial, doublePrecision, index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

export const labRuns = pgTable("lab_runs", {
  id: text("id").primaryKey(),
  scenario: text("scenario").notNull(),
  target: text("target").notNull(),
  /** Armed simulations; each is taken once, by whichever instance gets to it first. */
  faults: jsonb("faults")
    .notNull()
    .default(sql`'{}'::jsonb`),
  /** Requests seen at the edge, numbered so the diagram tells the attempts apart. */
  requests: integer("requests").notNull().default(0),
  /** Payments the unprotected twin created: it has no key to find them by. */
  naivePaymentIds: text("naive_payment_ids")
    .array()
    .notNull()
    .default(sql`'{}'::text[]`),
  /** Epoch milliseconds with a fraction, the clock the steps are measured on. */
  startedMs: doublePrecision("started_ms").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true, mode: "date" })
    .notNull()
    .default(sql`now()`),
});

export const labSteps = pgTable(
  "lab_steps",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    runId: text("run_id")
      .notNull()
      .references(() => labRuns.id, { onDelete: "cascade" }),
    /** Epoch milliseconds with a fraction, when the step happened (not when it was written). */
    atMs: doublePrecision("at_ms").notNull(),
    /** Breaks ties between steps of one process recorded in the same instant. */
    seq: integer("seq").notNull(),
    fromLane: text("from_lane").notNull(),
    toLane: text("to_lane").notNull(),
    /** The step as the middleware names it (fences, phases, downstream keys): the lab's technical view. */
    label: text("label").notNull(),
    /** The same step in words a shopper follows; null for steps recorded before it existed (the label stands in). */
    plain: text("plain"),
  },
  (t) => [index("lab_steps_run_idx").on(t.runId, t.atMs, t.seq)],
);
