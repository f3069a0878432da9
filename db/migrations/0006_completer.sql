ALTER TABLE "idempotency_keys" ADD COLUMN "completer_attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "completer_next_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "completer_error" text;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "completer_gave_up_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "completed_by" text;--> statement-breakpoint
CREATE INDEX "idempotency_keys_due_idx" ON "idempotency_keys" USING btree ("locked_until") WHERE "idempotency_keys"."state" = 'in_progress';