/**
 * Sign-in throttling without a lock-out anyone else can trigger, after
 * OWASP's authentication guidance: counters in PostgreSQL
 * (`admin_sign_in_limits`, shared by every instance) through
 * rate-limiter-flexible's Drizzle store, in two kinds.
 *
 * - Per client address: a bucket of failed guesses per window. An attempt
 *   takes its point before the password is checked, so guesses sent in
 *   parallel count too; a correct password gives it back. The address is the
 *   first `X-Forwarded-For` value, which the server rewrites at the socket
 *   (server/edge/node-edge.ts, TRUST_PROXY), so a client cannot pick it.
 * - Per operator: after a few free failures each further one makes the next
 *   attempt for that operator wait, doubling up to a short cap. Guesses from
 *   many addresses slow down sharply, yet the right password waits at most
 *   the cap: there is no shared bucket whose exhaustion keeps everyone out.
 */
import { RateLimiterDrizzle, RateLimiterRes } from "rate-limiter-flexible";
import type { Db } from "../../db/client";
import { adminSignInLimits } from "../../db/schema";

export type ThrottleLimits = {
  /** Failed guesses one address may make per window. */
  perAddress: number;
  windowSeconds: number;
  /** Failures of one operator before its attempts start to wait. */
  freeFailures: number;
  /** The longest wait a run of failures imposes on an operator. */
  maxDelaySeconds: number;
};

/** Ten guesses per address per quarter hour; an operator's waits double from 1 s to a minute after five failures. */
export const SIGN_IN_LIMITS: ThrottleLimits = { perAddress: 10, windowSeconds: 15 * 60, freeFailures: 5, maxDelaySeconds: 60 };

export type ThrottleVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Bounded, so a made-up name cannot store long keys. */
const MAX_KEY_LENGTH = 64;

const refusal = (waitMs: number): ThrottleVerdict => ({ allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) });

/**
 * `db`: the app's pool once opened; `prefix` keeps the counters of one
 * throttle apart from another's (tests make their own).
 */
export function createSignInThrottle(db: () => Db, limits: ThrottleLimits = SIGN_IN_LIMITS, prefix = "sign-in") {
  const store = (name: string, points: number) =>
    new RateLimiterDrizzle({
      storeClient: db(),
      schema: adminSignInLimits,
      keyPrefix: `${prefix}:${name}`,
      points,
      duration: limits.windowSeconds,
    });
  let limiters: { address: RateLimiterDrizzle; failures: RateLimiterDrizzle; wait: RateLimiterDrizzle } | undefined;
  // Built on first use: the pool is open by then (the root builds the throttle before start-up opens it).
  const get = () =>
    (limiters ??= {
      address: store("address", limits.perAddress),
      // A counter, not a limit: it only measures how long the run of failures is.
      failures: store("operator-failures", Number.MAX_SAFE_INTEGER),
      // One point, so a key `block`ed here is the operator's current wait.
      wait: store("operator-wait", 1),
    });
  const operatorKey = (operator: string) => operator.toLowerCase().slice(0, MAX_KEY_LENGTH);

  return {
    /** Refused while the operator's wait runs, or once the address has used its guesses. */
    async attempt(address: string, operator: string): Promise<ThrottleVerdict> {
      const { address: perAddress, wait } = get();
      const waiting = await wait.get(operatorKey(operator));
      if (waiting && waiting.consumedPoints > 1) return refusal(waiting.msBeforeNext);
      try {
        await perAddress.consume(address.slice(0, MAX_KEY_LENGTH));
        return { allowed: true };
      } catch (reason) {
        // A store failure is an internal error, not a refusal to guess again.
        if (!(reason instanceof RateLimiterRes)) throw reason;
        return refusal(reason.msBeforeNext);
      }
    },
    /** A wrong password: past the free failures, the operator's next attempt waits 1, 2, 4… s, up to the cap. */
    async failed(operator: string): Promise<void> {
      const { failures, wait } = get();
      const { consumedPoints } = await failures.consume(operatorKey(operator));
      const beyond = consumedPoints - limits.freeFailures;
      if (beyond > 0) await wait.block(operatorKey(operator), Math.min(2 ** (beyond - 1), limits.maxDelaySeconds));
    },
    /** A correct password: its attempt does not count, and the operator's run of failures ends. */
    async succeeded(address: string, operator: string): Promise<void> {
      const { address: perAddress, failures, wait } = get();
      await Promise.all([
        perAddress.reward(address.slice(0, MAX_KEY_LENGTH)),
        failures.delete(operatorKey(operator)),
        wait.delete(operatorKey(operator)),
      ]);
    },
  };
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;
