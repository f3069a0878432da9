/**
 * The environment's schema and its one check: zod, so a bad setting fails at
 * start-up with a message naming the variable, not later in a request. A
 * function of what it is given, without side effects, so `next.config.js`
 * runs the same check once it knows whether it builds (server/env.ts runs it
 * for the app).
 */
import { isIP } from "node:net";
import { z } from "zod";

/** Which peers are proxies: the last `hops` hops, or any peer among `addresses`. */
export type TrustProxy = { hops: number } | { addresses: string[] };

/** Whose `traceparent` is continued: nobody's (the default), everybody's, or the clients at these addresses. */
export type TraceCallers = "none" | "all" | { addresses: string[] };

/** Comma-separated IP addresses, or undefined when the text is not that. */
function ipList(value: string): string[] | undefined {
  const addresses = value
    .split(",")
    .map((a) => a.trim())
    .filter(Boolean);
  return addresses.length > 0 && addresses.every((a) => isIP(a) !== 0) ? addresses : undefined;
}

/** The admin password the run command uses when none is given (documented in the README). */
export const DEMO_ADMIN_PASSWORD = "demo-admin";

/** The name of the operator demo mode signs in with that password. */
export const DEMO_OPERATOR = "demo";
/** The webhook secret used when none is given: public, so a server using it stays on loopback. */
export const DEMO_WEBHOOK_SECRET = "whsec_demo_only";

const durationMs = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/**
 * Ports Node's fetch (undici) refuses with a bare "fetch failed", per the
 * WHATWG Fetch standard's "bad port" list
 * (https://fetch.spec.whatwg.org/#port-blocking): a service there answers curl
 * but never the app, so such a port is refused at start-up instead.
 */
export const BAD_PORTS: ReadonlySet<number> = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117,
  119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636,
  989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);
const httpPortFrom = (min: number) =>
  z.coerce
    .number()
    .int()
    .min(min)
    .max(65535)
    .refine((port) => !BAD_PORTS.has(port), { message: "is a port that fetch refuses (WHATWG bad port); choose another" });
const httpPort = (fallback: number, min: number) => httpPortFrom(min).default(fallback);

/** The provider stand-in's port when PSP_PORT is unset and it is free. */
export const DEFAULT_PSP_PORT = 4010;

const schema = z.object({
  NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
  /** Unset: the app starts an embedded PostgreSQL under EMBEDDED_PG_DIR. */
  DATABASE_URL: z.url().optional(),
  /**
   * A standby of DATABASE_URL's primary (`npm run cluster -- --ha` sets HAProxy's replica route):
   * the admin dashboard's lists, counts and activity read there, off the primary. Unset: they read
   * the primary like everything else.
   */
  DATABASE_REPLICA_URL: z.url().optional(),
  /**
   * "true": DATABASE_URL is a transaction-mode pooler (PgBouncer) in front of PostgreSQL, so a
   * server connection serves this process for one transaction at a time. The pool then uses no
   * named prepared statements (PgBouncer 1.18 cannot follow them from one server connection to
   * the next); everything else already holds there: no startup parameters, settings only by
   * SET LOCAL in each transaction, locks only transaction-scoped. Migrations take a session lock,
   * so they need PostgreSQL itself: with "true", MIGRATE_ON_START must be "false" and
   * `npm run db:migrate` refuses to run (run it with the primary's URL instead).
   */
  DATABASE_POOLED: z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true"),
  /**
   * "true": start-up applies the pending migrations. "false": it only checks that the database's
   * schema is at the latest migration, and exits if it is behind (several instances, and
   * `npm run db:migrate` run once against the primary before they start).
   */
  MIGRATE_ON_START: z
    .enum(["true", "false"])
    .default("true")
    .transform((v) => v === "true"),
  /** Unset: `.data/pg` in the checkout, or as root the project cache (see db/cluster-home.ts). Relative to the checkout. */
  EMBEDDED_PG_DIR: z.string().min(1).optional(),
  /** Unset: 54329 when free, else a free port; a running cluster keeps its own. */
  EMBEDDED_PG_PORT: z.coerce.number().int().min(1024).max(65535).optional(),
  PORT: httpPort(3000, 1),
  /** The address the run command listens on; beyond loopback only with your own ADMIN_PASSWORD and PSP_WEBHOOK_SECRET. */
  HOST: z.string().min(1).default("127.0.0.1"),
  /** How long start-up waits for PostgreSQL (with backoff) before it gives up and exits. */
  DATABASE_WAIT_MS: durationMs(60_000),
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
  /** A payment provider already running; unset: the app starts a stand-in of its own (PSP_PORT). */
  PSP_URL: z
    .url()
    .refine((u) => !BAD_PORTS.has(Number(new URL(u).port)), { message: "uses a port that fetch refuses (WHATWG bad port)" })
    .optional(),
  /**
   * The stand-in's port. Unset: DEFAULT_PSP_PORT when free, else a free port the ready line names.
   * Set and taken by anything but a stand-in of the same database: start-up refuses.
   */
  PSP_PORT: httpPortFrom(1024).optional(),
  /** How long the stand-in takes to answer for acct_test_slow. */
  PSP_SLOW_MS: z.coerce.number().int().min(0).default(3000),
  /** Signs the provider's webhooks (HMAC-SHA256). The default is a public demo value: set your own anywhere real. */
  PSP_WEBHOOK_SECRET: z.string().min(8).default(DEMO_WEBHOOK_SECRET),
  /** Per attempt; the client retries timeouts with the same downstream key. */
  PSP_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** The admin dashboard's password; unset disables admin sign-in, and production refuses to start without it. */
  ADMIN_PASSWORD: z.string().min(8, "must be at least 8 characters").optional(),
  /** Signs admin session cookies; unset: a key derived from ADMIN_PASSWORD, so restarts keep sessions. */
  ADMIN_SESSION_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  /**
   * Host names (comma-separated, no port) this app answers besides the loopback names
   * (localhost, *.localhost, 127.0.0.1, [::1]). Any other Host gets 421 before a handler runs:
   * a page that rebinds its own name to this machine (DNS rebinding) sends its own name.
   */
  ALLOWED_HOSTS: z
    .string()
    .default("")
    .transform((v) =>
      v
        .split(",")
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(/^[a-z0-9.-]+$|^\[[0-9a-f:]+\]$/, "must be host names without port or scheme"))),
  /**
   * Which proxies in front are believed about the client (X-Forwarded-For) and the host
   * (X-Forwarded-Host). "false" (default): none, the socket's peer is the client and both
   * headers are ignored. A number n: the last n hops (the peer included) are proxies.
   * Addresses (comma-separated): a peer among them is a proxy.
   */
  TRUST_PROXY: z
    .string()
    .default("false")
    .transform((v, ctx): TrustProxy => {
      const value = v.trim();
      if (value === "false" || value === "") return { hops: 0 };
      if (/^\d+$/.test(value)) return { hops: Math.min(Number(value), 10) };
      const addresses = ipList(value);
      if (addresses) return { addresses };
      ctx.addIssue({ code: "custom", message: 'must be "false", a number of hops, or comma-separated IP addresses' });
      return z.NEVER;
    }),
  /**
   * Whose W3C `traceparent` a request continues. "false" (default): nobody's; every request starts
   * its own trace under OTEL_TRACES_SAMPLER_ARG, so a client can neither force its request to be
   * recorded nor put a trace id of its choosing on a key. "true": every caller's (all callers are
   * your own services). Addresses (comma-separated): the clients at these addresses, as TRUST_PROXY
   * resolves them. `tracestate` and `baggage` are never passed on to the payment provider.
   */
  TRUST_TRACEPARENT: z
    .string()
    .default("false")
    .transform((v, ctx): TraceCallers => {
      const value = v.trim();
      if (value === "false" || value === "") return "none";
      if (value === "true") return "all";
      const addresses = ipList(value);
      if (addresses) return { addresses };
      ctx.addIssue({ code: "custom", message: 'must be "false", "true", or comma-separated IP addresses' });
      return z.NEVER;
    }),
  /**
   * Each tenant's budget of consequential requests (the idempotent POSTs, counted per tenant in
   * PostgreSQL so every instance shares it) per minute; past it a 429 with Retry-After until the
   * minute is over. 0 turns the budget off. Generous by default: a runaway client or a stolen
   * token cannot flood the database, an ordinary integration never meets it.
   */
  TENANT_REQUESTS_PER_MINUTE: z.coerce.number().int().min(0).default(3_000),
  /**
   * The storefront's anonymous checkouts per client address (the first X-Forwarded-For value, which
   * the edge sets from TRUST_PROXY) per minute, counted in PostgreSQL like the tenant's budget and
   * apart from it: a visitor never spends the shop's own integration budget. Past it a 429 with
   * Retry-After. 0 turns the budget off.
   */
  STOREFRONT_REQUESTS_PER_MINUTE: z.coerce.number().int().min(0).default(60),
  /**
   * Failure-lab runs started per minute, across instances (demo mode only; anyone may start one,
   * so there is no switch to turn the limit off). Past it a 429 with Retry-After.
   */
  LAB_RUNS_PER_MINUTE: z.coerce.number().int().min(1).default(30),
  /**
   * The most unexpired idempotency keys one tenant may hold (each keeps a stored answer for
   * IDEMPOTENCY_TTL_MS); past it a request with a new key gets a 429 until keys expire, while a
   * retry of a key it holds still gets its stored answer. Counted at most every 10 s per instance,
   * plus the new keys the instance admitted since: one instance stops at the cap, and each other
   * adds at most the cap less that count. 0 turns the cap off.
   */
  TENANT_MAX_LIVE_KEYS: z.coerce.number().int().min(0).default(1_000_000),
  /** A bearer token that lets a scraper off this machine read /api/metrics (loopback needs none); unset: loopback only. */
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  /** Where traces go over OTLP/HTTP (an OpenTelemetry collector's base URL); unset: tracing is off. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  /** The share of new traces recorded, 0 to 1 (OpenTelemetry's name; the sampler is always parent-based ratio). */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
  /**
   * The tenant id the storefront (/checkout) sells for when demo mode is off. Unset: outside
   * demo mode the storefront is off (404), so no deployment charges as the demo tenant by accident.
   */
  STOREFRONT_TENANT_ID: z.string().min(1).max(100).optional(),
  /**
   * The failure lab's simulations (/lab: fault switches, the unprotected twin). The run command
   * turns it on when it runs with its demo secrets; anywhere with a real ADMIN_PASSWORD it is refused.
   */
  DEMO_MODE: z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true"),
});

export type Env = z.infer<typeof schema>;

/** `building`: `next build`, which starts nothing; the server it builds is checked when it starts. */
export function parseEnv(source: Record<string, string | undefined>, { building }: { building: boolean }): Env {
  const result = schema.safeParse(source);
  if (!result.success) {
    const issues = result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    // One line: it is what a failed start prints.
    throw new Error(`Invalid environment: ${issues.join("; ")}`);
  }
  if (result.data.NODE_ENV === "production" && !result.data.ADMIN_PASSWORD && !building) {
    throw new Error(
      "Invalid environment: ADMIN_PASSWORD: required when NODE_ENV=production (it protects /admin); `npm start` sets a demo one when unset.",
    );
  }
  if (result.data.DATABASE_POOLED && result.data.MIGRATE_ON_START) {
    throw new Error(
      "Invalid environment: MIGRATE_ON_START: must be false when DATABASE_POOLED=true (migrations hold a session lock, which a transaction pooler cannot keep): run `npm run db:migrate` against PostgreSQL itself and start with MIGRATE_ON_START=false.",
    );
  }
  if (result.data.DATABASE_POOLED && !result.data.DATABASE_URL) {
    throw new Error(
      "Invalid environment: DATABASE_POOLED: true needs DATABASE_URL (the pooler's address); the embedded PostgreSQL has no pooler in front.",
    );
  }
  if (result.data.DEMO_MODE && result.data.ADMIN_PASSWORD !== undefined && result.data.ADMIN_PASSWORD !== DEMO_ADMIN_PASSWORD) {
    throw new Error(
      "Invalid environment:\n  DEMO_MODE: only with the demo secrets (ADMIN_PASSWORD unset or the demo one); a deployment with real secrets never simulates faults.",
    );
  }
  return result.data;
}
