/**
 * POST /v1/webhooks/psp: events the provider sends back, signed with
 * PSP_WEBHOOK_SECRET. Each event id is processed once: its row in
 * webhook_events is the first write of the transaction that applies it, so a
 * redelivery — even a concurrent one — meets the primary key, waits for the
 * first delivery to commit and then does nothing. Every delivery answers 200.
 * The provider's word is a fact: an event we cannot apply (unknown payment,
 * a refund beyond the captured amount) is still recorded, and flagged for
 * reconciliation.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import { z } from "zod";
import { refuseBadText } from "../input";
import { payments, refunds, webhookEvents } from "../../db/schema";
import { DomainError, toTRPCError } from "../errors";
import { env } from "../env";
import { newId } from "../ids";
import { Book, postMovement, transfer } from "../ledger/post";
import { amountSchema } from "../money";
import { publicProcedure, router } from "../trpc";

export const SIGNATURE_HEADER = "Psp-Signature";

export function signatureValid(rawBody: string | undefined, signature: string | null): boolean {
  if (rawBody === undefined || !signature || !/^[0-9a-f]{64}$/i.test(signature)) return false;
  const expected = createHmac("sha256", env.PSP_WEBHOOK_SECRET).update(rawBody, "utf8").digest();
  return timingSafeEqual(expected, Buffer.from(signature, "hex"));
}

/** A 401 unless the request's body carries the provider's signature (also the lab twin's receiver). */
export function checkSignature(ctx: { rawBody?: string; headers: Headers }): void {
  if (!signatureValid(ctx.rawBody, ctx.headers.get(SIGNATURE_HEADER))) {
    throw toTRPCError(new DomainError("invalid-signature", 401, `The ${SIGNATURE_HEADER} header is not the HMAC-SHA256 of this body.`));
  }
}

const signedProcedure = publicProcedure.use(async ({ ctx, next }) => {
  checkSignature(ctx);
  return next();
});

const eventSchema = z.object({
  id: z.string().regex(/^evt_[A-Za-z0-9_]{1,100}$/),
  type: z.string().min(1).max(100),
  data: z.looseObject({ paymentId: z.string().max(64).optional(), amount: z.unknown().optional() }),
})
  // Tolerant of unknown fields, but stored as JSON: text PostgreSQL cannot hold is still a 400.
  .superRefine(refuseBadText);

export const webhooksRouter = router({
  psp: signedProcedure
    .meta({ rest: { method: "POST", path: "/v1/webhooks/psp", status: 200, summary: "Receive a signed provider event (processed once per event id)", tags: ["webhooks"] } })
    .input(eventSchema)
    .output(z.object({ received: z.literal(true), duplicate: z.boolean() }))
    .mutation(async ({ ctx, input }) => {
      const duplicate = await ctx.db.transaction(async (tx) => {
        const [fresh] = await tx
          .insert(webhookEvents)
          .values({ id: input.id, type: input.type, payload: input, paymentId: input.data.paymentId ?? null })
          .onConflictDoNothing()
          .returning({ id: webhookEvents.id });
        if (!fresh) return true;
        const flag = async (reason: string, tenantId: string | null = null) => {
          await tx.update(webhookEvents).set({ flag: reason, tenantId }).where(eq(webhookEvents.id, input.id));
        };
        if (input.type !== "charge.refunded") return flag("unsupported_type").then(() => false);
        const amount = amountSchema.safeParse(input.data.amount);
        if (!amount.success) return flag("invalid_amount").then(() => false);
        const [payment] = input.data.paymentId ? await tx.select().from(payments).where(eq(payments.id, input.data.paymentId)) : [];
        if (!payment) return flag("unknown_payment").then(() => false);
        const [applied] = await tx
          .update(payments)
          .set({ amountRefundedMinor: sql`${payments.amountRefundedMinor} + ${amount.data}`, updatedAt: new Date() })
          .where(and(eq(payments.id, payment.id), sql`${payments.amountRefundedMinor} + ${amount.data} <= ${payments.amountCapturedMinor}`))
          .returning();
        if (!applied) return flag("over_refund", payment.tenantId).then(() => false);
        await tx.update(webhookEvents).set({ tenantId: payment.tenantId }).where(eq(webhookEvents.id, input.id));
        await tx.insert(refunds).values({ id: newId("re"), tenantId: payment.tenantId, paymentId: payment.id, amountMinor: amount.data, currency: payment.currency, status: "succeeded", eventId: input.id });
        await postMovement(tx, {
          tenantId: payment.tenantId,
          currency: payment.currency,
          cause: { eventId: input.id },
          links: { paymentId: payment.id },
          lines: transfer(Book.refunds, Book.pspClearing, amount.data),
        });
        return false;
      });
      return { received: true as const, duplicate };
    }),
});
