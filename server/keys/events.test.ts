/**
 * Issue 54: the built server's expiry sweep failed every round, deleting old
 * events with a Date parameter on a pool that Drizzle shares (Drizzle
 * replaces postgres-js's timestamp serialisers). This runs the deletion
 * through the app's pool as start-up opens it, Drizzle and all.
 */
import { expect, inject, it } from "vitest";
import { openAppDatabase } from "../database";
import { env } from "../env";
import { createEventLog } from "./events";

const DAY_MS = 24 * 60 * 60 * 1000;

it("deletes the events older than the retention through the app's pool, and keeps the younger ones", async () => {
  const { sql } = openAppDatabase(inject("databaseUrl"), { pooled: env.DATABASE_POOLED });
  const tenant = `events-retention-${crypto.randomUUID()}`;
  await sql`
    insert into idempotency_events (tenant_id, key, procedure, type, at) values
      (${tenant}, 'two-days-old', 'payments.create', 'conflict', now() - interval '2 days'),
      (${tenant}, 'an-hour-old', 'payments.create', 'conflict', now() - interval '1 hour')`;
  await createEventLog(() => sql).deleteOlderThan(DAY_MS);
  const left = await sql<{ key: string }[]>`select key from idempotency_events where tenant_id = ${tenant}`;
  expect(left.map((row) => row.key)).toEqual(["an-hour-old"]);
});
