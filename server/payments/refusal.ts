/**
 * The provider's refusal, as the domain's: a decided outcome (the provider
 * will answer the same downstream key the same way), so it is stored and
 * replayed for the key and never retried, unlike an unknown outcome.
 */
import { RuleViolationError, UpstreamUnavailableError } from "../errors";
import type { PspDeclined, PspFailure, PspRejected } from "../psp/client";

export const refusalReason = (result: PspDeclined | PspRejected): string => (result.kind === "declined" ? result.reason : result.type);

export const providerRefused = (reason: string) =>
  new RuleViolationError("provider-refused", `The payment provider refused this (${reason}).`, { reason });

/**
 * The provider did not do what was reserved. No answer: the outcome is
 * unknown, a retry asks again. A refusal is the provider's decision (say the
 * charge was refunded or voided at the provider first): the reservation is
 * given back in a phase of its own and the refusal is stored for the key.
 */
export async function providerFailed(result: PspFailure, release: () => Promise<void>): Promise<never> {
  if (result.kind === "unknown") {
    throw new UpstreamUnavailableError("The payment provider did not answer. Retry with the same Idempotency-Key to finish.", {
      cause: result.cause,
    });
  }
  await release();
  throw providerRefused(refusalReason(result));
}
