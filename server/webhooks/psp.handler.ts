/**
 * `webhooks.psp`: each event id is processed once. Its row in webhook_events
 * is the first write of the transaction that applies it, so a redelivery —
 * even a concurrent one — meets the primary key, waits for the first
 * delivery to commit and then does nothing. The provider's word is a fact:
 * an event we cannot apply (unknown payment, a refund beyond the captured
 * amount) is still recorded, and flagged for reconciliation.
 */
import { and, eq, sql } from "drizzle-orm";
import type { z } from "zod";
import type { Database } from "../../db/client";
import { payments, refunds, webhookEvents } from "../../db/schema";
import { newId } from "../ids";
import { Book, transfer, type Ledger } from "../ledger/post";
import { amountSchema } from "../money";
import type { eventSchema } from "./psp.schema";

export async function receiveEvent(ctx: { pool: Pick<Database, "transaction">; ledger: Ledger }, input: z.infer<typeof eventSchema>) {
  const duplicate = await ctx.pool.transaction(async (tx) => {
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
    await tx.insert(refunds).values({
      id: newId("re"),
      tenantId: payment.tenantId,
      paymentId: payment.id,
      amountMinor: amount.data,
      currency: payment.currency,
      status: "succeeded",
      eventId: input.id,
    });
    await ctx.ledger.post(tx, {
      tenantId: payment.tenantId,
      currency: payment.currency,
      cause: { eventId: input.id },
      links: { paymentId: payment.id },
      lines: transfer(Book.refunds, Book.pspClearing, amount.data),
    });
    return false;
  });
  return { received: true as const, duplicate };
}
