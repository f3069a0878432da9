/**
 * What one tenant may ask of the server, so a runaway client or a stolen
 * token cannot flood the database: a budget of consequential requests per
 * minute and a cap on the idempotency keys it holds at once. Both refuse
 * with a 429 and Retry-After before anything is claimed, so the same key
 * retried later runs once as if nothing had happened.
 *
 * The budget is rate-limiter-flexible's fixed window, counted in PostgreSQL
 * (`tenant_request_limits`) so every instance shares it. The key count is a
 * count per tenant taken at most every KEY_COUNT_MAX_AGE_MS per instance:
 * exact at each count, and cheap, since no request pays for a count of its
 * own and nothing contends on a shared counter row.
 */
import { isExpired } from "@exactly-once/trpc";
import { RateLimiterDrizzle, RateLimiterRes } from "rate-limiter-flexible";
import type { Database } from "../../db/client";
import { tenantRequestLimits } from "../../db/schema";
import { DomainError } from "../errors";

export type TenantLimitSettings = {
  /** Consequential requests per tenant per minute; 0: no budget. */
  requestsPerMinute: number;
  /** Unexpired keys a tenant may hold; 0: no cap. */
  maxLiveKeys: number;
};

const KEY_COUNT_MAX_AGE_MS = 10_000;
/** A tenant at its key cap waits for keys to expire: no sooner than the next count could see one gone. */
const KEY_QUOTA_RETRY_SECONDS = KEY_COUNT_MAX_AGE_MS / 1000;

export type TenantLimits = {
  /** Takes one consequential request from the tenant's budget, or throws the 429 that says when to retry. */
  admit(tenantId: string): Promise<void>;
};

/** `pool`: asked for on first use (building the limits must not open it); `prefix` keeps tests' counters apart. */
export function createTenantLimits(pool: () => Database, settings: TenantLimitSettings, prefix = "tenant"): TenantLimits {
  let budget: RateLimiterDrizzle | undefined;

  async function admitRequest(tenantId: string): Promise<void> {
    if (settings.requestsPerMinute === 0) return;
    budget ??= new RateLimiterDrizzle({
      storeClient: pool().db,
      schema: tenantRequestLimits,
      keyPrefix: prefix,
      points: settings.requestsPerMinute,
      duration: 60,
    });
    try {
      await budget.consume(tenantId);
    } catch (reason) {
      // A store failure is an internal error, not a refusal.
      if (!(reason instanceof RateLimiterRes)) throw reason;
      const retryAfter = Math.max(1, Math.ceil(reason.msBeforeNext / 1000));
      throw new DomainError(
        "too-many-requests",
        429,
        `This tenant has sent its ${settings.requestsPerMinute} consequential requests for this minute; retry in ${retryAfter} s.`,
        { retryAfter },
      );
    }
  }

  // One count per tenant at a time: the requests that find it stale together share the count under way.
  const counted = new Map<string, { keys: Promise<number>; at: number }>();

  function liveKeys(tenantId: string): Promise<number> {
    const now = Date.now();
    const known = counted.get(tenantId);
    if (known && now - known.at < KEY_COUNT_MAX_AGE_MS) return known.keys;
    const { sql } = pool();
    const keys = sql<
      { n: number }[]
    >`select count(*)::int as n from idempotency_keys k where k.tenant_id = ${tenantId} and not ${isExpired(sql, "k")}`.then(
      ([row]) => row!.n,
    );
    counted.set(tenantId, { keys, at: now });
    // A failed count is not kept: the next request counts again.
    keys.catch(() => counted.get(tenantId)?.keys === keys && counted.delete(tenantId));
    return keys;
  }

  async function admitKey(tenantId: string): Promise<void> {
    if (settings.maxLiveKeys === 0 || (await liveKeys(tenantId)) < settings.maxLiveKeys) return;
    throw new DomainError(
      "key-quota-exceeded",
      429,
      `This tenant holds ${settings.maxLiveKeys} unexpired idempotency keys, its most; new ones are taken as old ones expire.`,
      {
        retryAfter: KEY_QUOTA_RETRY_SECONDS,
      },
    );
  }

  return {
    async admit(tenantId) {
      await admitKey(tenantId);
      await admitRequest(tenantId);
    },
  };
}
