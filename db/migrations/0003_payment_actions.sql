ALTER TABLE "payments" ADD COLUMN "pending_action" text;--> statement-breakpoint
ALTER TABLE "refunds" ADD COLUMN "status" text DEFAULT 'succeeded' NOT NULL;