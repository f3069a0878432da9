/**
 * The provider attempts behind each charge, as this server made them: a
 * flaky provider's failed first call is invisible in the payment itself
 * (the retry with the same downstream key succeeds), so the checkout's
 * confirmation reads it from here. In memory and bounded: an explanation
 * for the demo, not a record (the provider and the ledger are the records).
 */
import type { ObservedCall } from "../psp/client";

export type ChargeAttempt = { status: number | null; error: string | null; replayed: boolean; ms: number };

const MAX_PAYMENTS = 1_000;
const store = globalThis as typeof globalThis & { __chargeAttempts?: Map<string, ChargeAttempt[]> };
const byPayment = (store.__chargeAttempts ??= new Map());

/** Charges carry their payment id as `reference`; anything else is not a charge attempt. */
export function noteChargeAttempt(call: ObservedCall): void {
  const reference = call.method === "POST" && call.path === "/charges" ? (call.body as { reference?: unknown } | undefined)?.reference : undefined;
  if (typeof reference !== "string") return;
  const attempts = byPayment.get(reference) ?? [];
  attempts.push({ status: call.status ?? null, error: call.error ?? null, replayed: call.replayed, ms: Math.round(call.elapsedMs) });
  byPayment.delete(reference);
  byPayment.set(reference, attempts);
  for (const oldest of byPayment.keys()) {
    if (byPayment.size <= MAX_PAYMENTS) break;
    byPayment.delete(oldest);
  }
}

export const chargeAttemptsOf = (paymentId: string): ChargeAttempt[] => [...(byPayment.get(paymentId) ?? [])];
