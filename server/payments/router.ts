/** Payments: create (charged through the provider), get, list, and the follow-up actions in actions.ts. */
import { desc, eq } from "drizzle-orm";
import { z } from "zod";
import { idInput, strictInput } from "../input";
import { payments, PaymentStatus } from "../../db/schema";
import { newId } from "../ids";
import { amountSchema, currencySchema } from "../money";
import { recoverableProcedure, router, tenantProcedure } from "../trpc";
import { captureProcedure, refundProcedure, voidProcedure } from "./actions";
import { chargeAndRecord } from "./charge";
import { chargeAttemptSchema, chargeAttemptsOf } from "./charge-attempts";
import { destinationSchema, paymentSchema, presentPayment } from "./present";
import { paymentOf } from "./queries";

export const paymentsRouter = router({
  create: recoverableProcedure(
    strictInput({ amount: amountSchema, currency: currencySchema, destination: destinationSchema, capture: z.boolean().default(true) }),
    { resumable: true },
  )
    .meta({ rest: { method: "POST", path: "/v1/payments", status: 201, summary: "Charge an amount to a destination (capture: false only authorises)", tags: ["payments"] } })
    .output(paymentSchema)
    .mutation(async ({ ctx, input }) => {
      const h = ctx.idempotency;
      const { paymentId } = await h.phase("created", async (tx) => {
        const id = newId("pay");
        await tx.insert(payments).values({
          id,
          tenantId: ctx.tenant.id,
          status: PaymentStatus.Pending,
          amountMinor: input.amount,
          currency: input.currency,
          destination: input.destination,
          capture: input.capture ? "automatic" : "manual",
          idempotencyKey: h.key,
        });
        return { paymentId: id };
      });
      await chargeAndRecord(h, {
        tenantId: ctx.tenant.id,
        paymentId,
        amountMinor: input.amount,
        currency: input.currency,
        destination: input.destination,
        capture: input.capture,
      });
      return presentPayment(await paymentOf(ctx.db, ctx.tenant.id, paymentId));
    }),

  get: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/payments/{id}", summary: "A payment", tags: ["payments"] } })
    .input(idInput)
    .output(paymentSchema)
    .query(async ({ ctx, input }) => presentPayment(await paymentOf(ctx.db, ctx.tenant.id, input.id))),

  list: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/payments", summary: "Payments, newest first", tags: ["payments"] } })
    .input(strictInput({ limit: z.coerce.number().int().min(1).max(100).default(10) }))
    .output(z.object({ data: z.array(paymentSchema) }))
    .query(async ({ ctx, input }) => {
      const rows = await ctx.db.select().from(payments).where(eq(payments.tenantId, ctx.tenant.id)).orderBy(desc(payments.createdAt), desc(payments.id)).limit(input.limit);
      return { data: rows.map(presentPayment) };
    }),

  attempts: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/payments/{id}/attempts", summary: "The calls made to the provider for a payment's charge, in order", tags: ["payments"] } })
    .input(idInput)
    .output(z.object({ data: z.array(chargeAttemptSchema) }))
    .query(async ({ ctx, input }) => {
      await paymentOf(ctx.db, ctx.tenant.id, input.id);
      return { data: await chargeAttemptsOf(ctx.db, input.id) };
    }),

  capture: captureProcedure,
  void: voidProcedure,
  refund: refundProcedure,
});
