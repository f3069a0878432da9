CREATE TABLE "lab_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"scenario" text NOT NULL,
	"target" text NOT NULL,
	"faults" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"requests" integer DEFAULT 0 NOT NULL,
	"naive_payment_ids" text[] DEFAULT '{}'::text[] NOT NULL,
	"started_ms" double precision NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "lab_steps" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"run_id" text NOT NULL,
	"at_ms" double precision NOT NULL,
	"seq" integer NOT NULL,
	"from_lane" text NOT NULL,
	"to_lane" text NOT NULL,
	"label" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "lab_steps" ADD CONSTRAINT "lab_steps_run_id_lab_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."lab_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "lab_steps_run_idx" ON "lab_steps" USING btree ("run_id","at_ms","seq");