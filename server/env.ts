/**
 * The one place that reads `process.env`. Parsed once with zod, so a bad
 * setting fails at start-up with a message naming the variable, not later in a
 * request. `next.config.js` imports this module so `next build` checks it too.
 */
import { z } from "zod";

const durationMs = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const schema = z.object({
  NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
  /** Unset: the app starts an embedded PostgreSQL under EMBEDDED_PG_DIR. */
  DATABASE_URL: z.url().optional(),
  EMBEDDED_PG_DIR: z.string().default(".data/pg"),
  EMBEDDED_PG_PORT: z.coerce.number().int().min(1024).max(65535).default(54329),
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  IDEMPOTENCY_TTL_MS: durationMs(24 * 60 * 60 * 1000),
  IDEMPOTENCY_LEASE_MS: durationMs(30_000),
  /** How often the in-process sweep deletes expired keys; 0 turns it off. */
  IDEMPOTENCY_SWEEP_MS: z.coerce.number().int().min(0).default(60_000),
  /** How often each instance's completer looks for keys whose client went away (server/keys/completer.ts); 0 turns it off. */
  COMPLETER_INTERVAL_MS: z.coerce.number().int().min(0).default(5_000),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Seed the demo tenant and catalog on start (the run command does). */
  SEED_DEMO: z
    .enum(["true", "false"])
    .default("true")
    .transform((v) => v === "true"),
  /** A payment provider already running; unset: the app starts the stand-in on PSP_PORT. */
  PSP_URL: z.url().optional(),
  PSP_PORT: z.coerce.number().int().min(1024).max(65535).default(4010),
  /** How long the stand-in takes to answer for acct_test_slow. */
  PSP_SLOW_MS: z.coerce.number().int().min(0).default(3000),
  /** Signs the provider's webhooks (HMAC-SHA256). The default is a public demo value: set your own anywhere real. */
  PSP_WEBHOOK_SECRET: z.string().min(8).default("whsec_demo_only"),
  /** Per attempt; the client retries timeouts with the same downstream key. */
  PSP_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** The admin dashboard's password; unset disables admin sign-in, and production refuses to start without it. */
  ADMIN_PASSWORD: z.string().min(8, "must be at least 8 characters").optional(),
  /** Signs admin session cookies; unset: a key derived from ADMIN_PASSWORD, so restarts keep sessions. */
  ADMIN_SESSION_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
});

export type Env = z.infer<typeof schema>;

function parse(): Env {
  const result = schema.safeParse(process.env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid environment:\n${lines.join("\n")}`);
  }
  // `next build` also runs with NODE_ENV=production but starts nothing; the server it builds is checked when it starts.
  const building = process.env.NEXT_PHASE === "phase-production-build";
  if (result.data.NODE_ENV === "production" && !result.data.ADMIN_PASSWORD && !building) {
    throw new Error("Invalid environment:\n  ADMIN_PASSWORD: required when NODE_ENV=production (it protects /admin); `npm start` sets a demo one when unset.");
  }
  return result.data;
}

export const env: Env = parse();
