ALTER TABLE "idempotency_keys" ADD COLUMN IF NOT EXISTS "trace_id" text;
--> statement-breakpoint
-- A claim traced before the key row had its trace id was an event row of its own: its trace moves onto the key row.
UPDATE "idempotency_keys" k SET "trace_id" = e."trace_id" FROM "idempotency_events" e
WHERE e."type" = 'claimed' AND e."trace_id" IS NOT NULL AND e."tenant_id" = k."tenant_id" AND e."key" = k."key" AND k."trace_id" IS NULL;
--> statement-breakpoint
DELETE FROM "idempotency_events" WHERE "type" = 'claimed';
