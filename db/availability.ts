/**
 * Is the database there? One answer shared by start-up (instrumentation), the
 * request gate (proxy.ts), the health endpoint and the error mapping, kept on
 * `globalThis` because Next.js loads each of them in a bundle of its own.
 *
 * - `starting`: the instance waits for PostgreSQL and its migrations; every
 *   request gets 503 with Retry-After, health says why.
 * - `ready`: serving. `databaseUp` follows a probe (and failed queries), so a
 *   running instance answers 503 while PostgreSQL is away and serves again,
 *   on the same pool, as soon as it is back.
 */
export const Phase = { starting: "starting", ready: "ready" } as const;
export type Phase = (typeof Phase)[keyof typeof Phase];

type Availability = { phase: Phase; databaseUp: boolean; detail: string };

const holder = globalThis as { __eoAvailability?: Availability };

/** No instrumentation at all (tests, CLIs): the caller opened the pool itself. */
const state = (): Availability => (holder.__eoAvailability ??= { phase: Phase.ready, databaseUp: true, detail: "" });

export const availability = (): Readonly<Availability> => state();

export function markStarting(detail: string): void {
  Object.assign(state(), { phase: Phase.starting, databaseUp: false, detail });
}

export function markReady(): void {
  Object.assign(state(), { phase: Phase.ready, databaseUp: true, detail: "" });
}

export function markDatabase(up: boolean): void {
  state().databaseUp = up;
}

/** Seconds a client should wait before trying again while the database is away. */
export const RETRY_AFTER_SECONDS = 1;

/**
 * The database cannot be reached (refused, reset, timed out, shutting down,
 * restarting, not the primary) as opposed to a query it answered with an error. Walks the
 * cause chain: Drizzle and tRPC wrap the driver's error.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== "string") continue;
    // Node's socket errors, and postgres-js's own for a connection that went away.
    if (
      [
        "ECONNREFUSED",
        "ECONNRESET",
        "ETIMEDOUT",
        "EPIPE",
        "EHOSTUNREACH",
        "CONNECT_TIMEOUT",
        "CONNECTION_CLOSED",
        "CONNECTION_ENDED",
        "CONNECTION_DESTROYED",
      ].includes(code)
    )
      return true;
    // SQLSTATE 08: connection exception; 57P01-57P03: shutting down, crashed, starting up; 25006: a read-only
    // transaction, which every write of this app here means it reached a standby (a primary restarting as one
    // before Patroni promotes it again, or a demoted one): the write did not happen, and a retry reaches the primary.
    if (/^08...$/.test(code) || /^57P0[123]$/.test(code) || code === "25006") return true;
  }
  return false;
}
