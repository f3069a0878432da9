CREATE TABLE "admin_operators" (
	"name" text PRIMARY KEY NOT NULL,
	"role" text NOT NULL,
	"password_hash" text NOT NULL,
	"demo" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "admin_audit_log" ADD COLUMN "operator" text;--> statement-breakpoint
ALTER TABLE "admin_sessions" ADD COLUMN "operator" text;--> statement-breakpoint
ALTER TABLE "admin_sessions" ADD CONSTRAINT "admin_sessions_operator_admin_operators_name_fk" FOREIGN KEY ("operator") REFERENCES "public"."admin_operators"("name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "admin_sessions_operator_idx" ON "admin_sessions" USING btree ("operator");