/**
 * The wire format of the payment provider stand-in, in one place: the stand-in
 * validates requests with these schemas and the app's client parses the
 * answers with them, so the two cannot drift apart. Amounts are integer minor
 * units, as the provider counts them.
 */
import { z } from "zod";

export const ChargeStatus = {
  succeeded: "succeeded",
  requiresCapture: "requires_capture",
  canceled: "canceled",
} as const;
export type ChargeStatus = (typeof ChargeStatus)[keyof typeof ChargeStatus];

const minor = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const currency = z.string().regex(/^[A-Z]{3}$/, "three upper-case letters");

export const chargeSchema = z.object({
  id: z.string().startsWith("ch_"),
  status: z.enum([ChargeStatus.succeeded, ChargeStatus.requiresCapture, ChargeStatus.canceled]),
  amount: minor,
  currency,
  destination: z.string(),
  captured: z.boolean(),
  amountRefunded: z.number().int().nonnegative(),
  reference: z.string().nullable(),
  createdAt: z.iso.datetime(),
});
export type Charge = z.infer<typeof chargeSchema>;

export const refundSchema = z.object({
  id: z.string().startsWith("re_"),
  chargeId: z.string().startsWith("ch_"),
  amount: minor,
  createdAt: z.iso.datetime(),
});
export type Refund = z.infer<typeof refundSchema>;

export const chargeWithRefundsSchema = chargeSchema.extend({ refunds: z.array(refundSchema) });
export type ChargeWithRefunds = z.infer<typeof chargeWithRefundsSchema>;

/** `GET /keys/{key}`: the answer stored for a downstream key, or a request under it still running. */
export const keyLookupSchema = z.discriminatedUnion("state", [
  z.object({ key: z.string(), state: z.literal("in_flight") }),
  z.object({ key: z.string(), state: z.literal("answered"), status: z.number().int(), body: z.unknown() }),
]);
export type KeyLookup = z.infer<typeof keyLookupSchema>;

export const chargeListSchema = z.object({ data: z.array(chargeWithRefundsSchema) });

/** Every refusal the provider gives has this shape; `type` tells them apart. */
export const errorBodySchema = z.object({
  error: z.object({ type: z.string(), message: z.string().optional() }),
});

export const chargeRequestSchema = z.strictObject({
  amount: minor,
  currency,
  destination: z.string().startsWith("acct_").max(255),
  // Like the app's own API, a charge captures unless told to only authorise.
  capture: z.boolean().default(true),
  reference: z.string().min(1).max(255).optional(),
});
export type ChargeInput = z.input<typeof chargeRequestSchema>;

export const emptyRequestSchema = z.strictObject({});

export const refundRequestSchema = z.strictObject({ amount: minor });

export const webhookEventSchema = z.looseObject({
  id: z.string().startsWith("evt_"),
  type: z.string().min(1),
  data: z.looseObject({}),
});

export const webhookSendSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/ }),
  event: webhookEventSchema,
});

/** The test destinations whose behaviour the contract fixes. */
export const TestDestination = {
  decline: "acct_test_decline",
  slow: "acct_test_slow",
  error: "acct_test_error",
} as const;
