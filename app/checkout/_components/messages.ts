/**
 * What a shopper reads when a payment does not go through: written for
 * people, never the API's text for developers (which talks of headers and
 * Retry-After). Only problems whose detail is already written for shoppers
 * (a coupon, a declined card, a missing product) pass their detail through.
 */
export type Problem = { type?: string; status: number; detail: string };

const SHOPPER_WORDED = new Set(["/problems/payment-declined", "/problems/coupon-redeemed", "/problems/coupon-unknown"]);

const BY_TYPE: Record<string, string> = {
  "/problems/idempotency-key-in-progress":
    "Your payment is still being processed. Wait a moment and press Pay again: it continues the same payment and never charges twice.",
  "/problems/idempotency-lease-lost":
    "Your payment is still being processed. Wait a moment and press Pay again: it continues the same payment and never charges twice.",
  "/problems/idempotency-key-mismatch":
    "This cart changed while its payment was under way. Reload the page to see where the payment stands.",
};

export function shopperMessage(problem: Problem): string {
  if (problem.type && SHOPPER_WORDED.has(problem.type)) return problem.detail;
  if (problem.type && BY_TYPE[problem.type]) return BY_TYPE[problem.type]!;
  if (problem.status === 402) return "The card was declined.";
  if (problem.status === 409) return BY_TYPE["/problems/idempotency-key-in-progress"]!;
  if (problem.status === 400 || problem.status === 422)
    return "Something in the cart is not right any more. Please check it and try again.";
  return "The payment did not go through. Please try again.";
}

/** A failure with no answer to show: the outcome is open, and paying again is safe. */
export const NOT_CONFIRMED =
  "The payment is not confirmed yet. Paying again is safe: it continues the same payment, it never charges twice.";
