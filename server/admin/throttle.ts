/**
 * Sign-in throttling, per client address and overall, with its counters in
 * PostgreSQL (`admin_sign_in_limits`) so every instance of the app shares
 * them. rate-limiter-flexible's Drizzle store counts with one atomic upsert
 * per attempt on the app's own drizzle client and migrated table.
 *
 * Every attempt takes a point from both buckets before the password is
 * checked, so guesses sent in parallel are counted too; a correct password
 * gives its points back, so only failures add up.
 *
 * The client address is the first `X-Forwarded-For` hop: the one a proxy in
 * front sets, or the socket address Next.js puts there when the request has
 * none. Without a proxy a client can set that header itself and so pick its
 * own bucket; the overall bucket is what bounds guessing then.
 */
import { RateLimiterDrizzle, RateLimiterRes } from "rate-limiter-flexible";
import { database } from "../../db/client";
import { adminSignInLimits } from "../../db/schema";

export type ThrottleLimits = { perAddress: number; overall: number; windowSeconds: number };

/** Ten failed guesses per address and a hundred in all per quarter hour: plenty for people, nothing for a guesser. */
export const SIGN_IN_LIMITS: ThrottleLimits = { perAddress: 10, overall: 100, windowSeconds: 15 * 60 };

export type ThrottleVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Bounded, so a made-up header cannot store long keys. */
const MAX_ADDRESS_LENGTH = 64;

export function clientAddress(headers: Headers): string {
  return (headers.get("x-forwarded-for")?.split(",")[0]?.trim() || "unknown").slice(0, MAX_ADDRESS_LENGTH);
}

/** `prefix` keeps the counters of one throttle apart from another's (tests make their own). */
export function createSignInThrottle(limits: ThrottleLimits = SIGN_IN_LIMITS, prefix = "sign-in") {
  const store = (points: number) =>
    new RateLimiterDrizzle({
      storeClient: database().db,
      schema: adminSignInLimits,
      keyPrefix: prefix,
      points,
      duration: limits.windowSeconds,
    });
  let limiters: { address: RateLimiterDrizzle; overall: RateLimiterDrizzle } | undefined;
  // Built on first use: the database is opened by then (importing this module must not open it).
  const get = () => (limiters ??= { address: store(limits.perAddress), overall: store(limits.overall) });
  const addressKey = (address: string) => `address:${address}`;

  return {
    /** Takes one attempt from both buckets; refused when either is empty. */
    async attempt(address: string): Promise<ThrottleVerdict> {
      const { address: perAddress, overall } = get();
      const results = await Promise.allSettled([perAddress.consume(addressKey(address)), overall.consume("all")]);
      const refused = results.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
      if (refused.length === 0) return { allowed: true };
      // A store failure is an internal error, not a refusal to guess again.
      const failure = refused.find((reason) => !(reason instanceof RateLimiterRes));
      if (failure !== undefined) throw failure;
      const waitMs = Math.max(...(refused as RateLimiterRes[]).map((r) => r.msBeforeNext));
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    },
    /** A correct password: its attempt does not count. */
    async succeeded(address: string): Promise<void> {
      const { address: perAddress, overall } = get();
      await Promise.all([perAddress.reward(addressKey(address)), overall.reward("all")]);
    },
  };
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;

export const signInThrottle = createSignInThrottle();
