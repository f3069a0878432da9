/**
 * Payments: create (charged through the provider), get, list, the provider
 * attempts behind a charge, and the follow-up actions: capture, void, refund.
 * Handlers take only what they use from the context.
 */
import { z } from "zod";
import type { ProblemSlug } from "../errors";
import { idInput } from "../input";
import { recoverableProcedure, router, tenantProcedure } from "../trpc";
import { listChargeAttempts } from "./attempts.handler";
import { chargeAttemptSchema } from "./charge-attempts";
import { createPayment } from "./create.handler";
import { createPaymentInput } from "./create.schema";
import { listPayments } from "./list.handler";
import { listPaymentsInput } from "./list.schema";
import { paymentSchema, presentPayment } from "./present";
import { paymentOf } from "./queries";
import { refundPayment } from "./refund.handler";
import { refundInput, refundSchema } from "./refund.schema";
import { SettleAction, settleAuthorization } from "./settle.handler";

/** What capture and void refuse with (settle.handler.ts, refusal.ts). */
const SETTLE_REFUSALS: ProblemSlug[] = [
  "payment-captured",
  "payment-canceled",
  "payment-not-authorized",
  "provider-refused",
  "upstream-unavailable",
];

export const paymentsRouter = router({
  create: recoverableProcedure(createPaymentInput, { resumable: true })
    .meta({
      rest: {
        method: "POST",
        path: "/v1/payments",
        status: 201,
        summary: "Charge an amount to a destination (capture: false only authorises)",
        tags: ["payments"],
        refusals: ["payment-declined", "provider-refused", "upstream-unavailable"],
      },
    })
    .output(paymentSchema)
    .mutation(({ ctx, input }) => createPayment(ctx, input)),

  get: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/payments/{id}", summary: "A payment", tags: ["payments"] } })
    .input(idInput)
    .output(paymentSchema)
    .query(async ({ ctx, input }) => presentPayment(await paymentOf(ctx.db, ctx.tenant.id, input.id))),

  list: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/payments", summary: "Payments, newest first", tags: ["payments"] } })
    .input(listPaymentsInput)
    .output(z.object({ data: z.array(paymentSchema) }))
    .query(({ ctx, input }) => listPayments(ctx, input)),

  attempts: tenantProcedure
    .meta({
      rest: {
        method: "GET",
        path: "/v1/payments/{id}/attempts",
        summary: "The calls made to the provider for a payment's charge, in order",
        tags: ["payments"],
      },
    })
    .input(idInput)
    .output(z.object({ data: z.array(chargeAttemptSchema) }))
    .query(({ ctx, input }) => listChargeAttempts(ctx, input)),

  capture: recoverableProcedure(idInput, { resumable: true })
    .meta({
      rest: {
        method: "POST",
        path: "/v1/payments/{id}/capture",
        status: 200,
        summary: "Capture an authorized payment",
        tags: ["payments"],
        refusals: SETTLE_REFUSALS,
      },
    })
    .output(paymentSchema)
    .mutation(({ ctx, input }) => settleAuthorization(ctx, input, SettleAction.Capture)),

  void: recoverableProcedure(idInput, { resumable: true })
    .meta({
      rest: {
        method: "POST",
        path: "/v1/payments/{id}/void",
        status: 200,
        summary: "Void an authorized payment",
        tags: ["payments"],
        refusals: SETTLE_REFUSALS,
      },
    })
    .output(paymentSchema)
    .mutation(({ ctx, input }) => settleAuthorization(ctx, input, SettleAction.Void)),

  refund: recoverableProcedure(refundInput, { resumable: true })
    .meta({
      rest: {
        method: "POST",
        path: "/v1/payments/{id}/refunds",
        status: 201,
        summary: "Refund part or all of a captured payment",
        tags: ["payments"],
        refusals: ["payment-not-refundable", "refund-exceeds-captured", "provider-refused", "upstream-unavailable"],
      },
    })
    .output(refundSchema)
    .mutation(({ ctx, input }) => refundPayment(ctx, input)),
});
