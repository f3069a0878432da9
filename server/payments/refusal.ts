/**
 * The provider's refusal, as the domain's: a decided outcome (the provider
 * will answer the same downstream key the same way), so it is stored and
 * replayed for the key and never retried, unlike an unknown outcome.
 */
import { RuleViolationError } from "../errors";
import type { PspDeclined, PspRejected } from "../psp/client";

export const refusalReason = (result: PspDeclined | PspRejected): string => (result.kind === "declined" ? result.reason : result.type);

export const providerRefused = (reason: string) => new RuleViolationError("provider-refused", `The payment provider refused this (${reason}).`, { reason });
