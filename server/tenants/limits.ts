/**
 * What may be asked of the server from outside, so a runaway client, a
 * stolen token or an anonymous visitor cannot flood the database: budgets of
 * consequential requests per minute, and a cap on the idempotency keys a
 * tenant holds at once. Each refuses with a 429 and Retry-After before
 * anything is claimed, so the same key retried later runs once as if
 * nothing had happened.
 *
 * The budgets are rate-limiter-flexible's fixed windows, counted in
 * PostgreSQL (`tenant_request_limits`) so every instance shares them: one per
 * tenant for requests with its token, and one per client address for the
 * storefront's anonymous checkouts, which never take from the tenant's (a
 * visitor must not lock the shop's own integration out).
 *
 * The key cap applies to new keys only (the middleware's `admitNewKey`, asked
 * only when a call would insert a key row): a retry of a key the tenant holds
 * gets its stored answer at the cap. It decides from a count per tenant taken
 * at most every KEY_COUNT_MAX_AGE_MS per instance, when a request is admitted
 * (before the middleware holds a connection), plus the new keys this instance
 * admitted since that count began. So a burst stops at the cap on one
 * instance; what a count can miss is a key admitted before it began and
 * written after (a claim in flight at that moment), and each other instance
 * admits at most the cap less the count on top. Cheap: no request pays for a
 * count of its own, and nothing contends on a shared counter row.
 */
import { isExpired } from "@exactly-once/trpc";
import { RateLimiterDrizzle, RateLimiterRes } from "rate-limiter-flexible";
import type { Database } from "../../db/client";
import { tenantRequestLimits } from "../../db/schema";
import { DomainError } from "../errors";

export type TenantLimitSettings = {
  /** Consequential requests per tenant per minute, with its token; 0: no budget. */
  requestsPerMinute: number;
  /** Unexpired keys a tenant may hold; 0: no cap. */
  maxLiveKeys: number;
  /** The storefront's anonymous checkouts per client address per minute; 0: no budget. */
  storefrontRequestsPerMinute: number;
};

const KEY_COUNT_MAX_AGE_MS = 10_000;
/** A tenant at its key cap waits for keys to expire: no sooner than the next count could see one gone. */
const KEY_QUOTA_RETRY_SECONDS = KEY_COUNT_MAX_AGE_MS / 1000;

export type TenantLimits = {
  /** A request with the tenant's token: takes one from the tenant's budget, or throws the 429 that says when to retry. */
  admit(tenantId: string): Promise<void>;
  /** An anonymous storefront request: takes one from its client address's budget, never from the tenant's. */
  admitStorefront(tenantId: string, address: string): Promise<void>;
  /**
   * A new key for an admitted request: refused at the cap. It decides from
   * the count its `admit` made sure of, without waiting for the pool (the
   * middleware asks while it holds a connection).
   */
  admitNewKey(tenantId: string): Promise<void>;
};

/** One tenant's key count and the new keys this instance admitted, as a running total, so a count knows which came after it began. */
type Tally = {
  admitted: number;
  count?: { keys: number; at: number; admittedBefore: number };
  counting?: Promise<void>;
};

/** `pool`: asked for on first use (building the limits must not open it); `prefix` keeps tests' counters apart. */
export function createTenantLimits(pool: () => Database, settings: TenantLimitSettings, prefix = "tenant"): TenantLimits {
  /** A fixed window per key, built on first use; undefined: no budget. */
  function budget(keyPrefix: string, points: number) {
    let limiter: RateLimiterDrizzle | undefined;
    if (points === 0) return undefined;
    return () =>
      (limiter ??= new RateLimiterDrizzle({ storeClient: pool().db, schema: tenantRequestLimits, keyPrefix, points, duration: 60 }));
  }
  const tenantBudget = budget(prefix, settings.requestsPerMinute);
  // Per address within the storefront's tenant: the key names both.
  const storefrontBudget = budget(`${prefix}-storefront`, settings.storefrontRequestsPerMinute);

  async function take(limiter: () => RateLimiterDrizzle, key: string, spent: string): Promise<void> {
    try {
      await limiter().consume(key);
    } catch (reason) {
      // A store failure is an internal error, not a refusal.
      if (!(reason instanceof RateLimiterRes)) throw reason;
      const retryAfter = Math.max(1, Math.ceil(reason.msBeforeNext / 1000));
      throw new DomainError("too-many-requests", 429, `${spent} for this minute; retry in ${retryAfter} s.`, { retryAfter });
    }
  }

  const tallies = new Map<string, Tally>();

  function tallyOf(tenantId: string): Tally {
    let tally = tallies.get(tenantId);
    if (!tally) tallies.set(tenantId, (tally = { admitted: 0 }));
    return tally;
  }

  /** Makes sure a count at most KEY_COUNT_MAX_AGE_MS old is at hand; the requests that find it stale share one count. */
  function counted(tenantId: string): Promise<void> | undefined {
    if (settings.maxLiveKeys === 0) return undefined;
    const tally = tallyOf(tenantId);
    if (tally.count && Date.now() - tally.count.at < KEY_COUNT_MAX_AGE_MS) return undefined;
    if (tally.counting) return tally.counting;
    const at = Date.now();
    const admittedBefore = tally.admitted;
    const { sql } = pool();
    const counting = sql<{ n: number }[]>`
      select count(*)::int as n from idempotency_keys k where k.tenant_id = ${tenantId} and not ${isExpired(sql, "k")}`.then(([row]) => {
      tally.count = { keys: row!.n, at, admittedBefore };
    });
    tally.counting = counting;
    // A failed count is not kept: the next request counts again.
    const done = () => void (tally.counting === counting && (tally.counting = undefined));
    counting.then(done, done);
    return counting;
  }

  return {
    async admit(tenantId) {
      await counted(tenantId);
      if (tenantBudget) await take(tenantBudget, tenantId, `This tenant has sent its ${settings.requestsPerMinute} consequential requests`);
    },
    async admitStorefront(tenantId, address) {
      await counted(tenantId);
      if (storefrontBudget)
        await take(
          storefrontBudget,
          `${tenantId}:${address}`,
          `This address has sent the storefront its ${settings.storefrontRequestsPerMinute} checkouts`,
        );
    },
    async admitNewKey(tenantId) {
      if (settings.maxLiveKeys === 0) return;
      const tally = tallyOf(tenantId);
      // Admitted requests come with a count; one without (a count failed since) waits for its own.
      if (!tally.count) await counted(tenantId);
      const { keys, admittedBefore } = tally.count!;
      if (keys + (tally.admitted - admittedBefore) < settings.maxLiveKeys) {
        tally.admitted++;
        return;
      }
      throw new DomainError(
        "key-quota-exceeded",
        429,
        `This tenant holds ${settings.maxLiveKeys} unexpired idempotency keys, its most; new ones are taken as old ones expire.`,
        { retryAfter: KEY_QUOTA_RETRY_SECONDS },
      );
    },
  };
}
