/**
 * `payments.refund`: reserve the amount on the payment row (so refunds racing
 * can never add up past the captured amount), ask the provider with the
 * key's downstream key, then record the outcome: three phases a retry
 * resumes from.
 */
import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { payments, PaymentStatus, refunds } from "../../db/schema";
import { RuleViolationError } from "../errors";
import type { RecoverableHandle } from "@exactly-once/trpc";
import { newId } from "../ids";
import { Book, transfer, type Ledger } from "../ledger/post";
import { formatMinor } from "../money";
import type { PspClient } from "../psp/client";
import { paymentOf } from "./queries";
import type { RefundInput } from "./refund.schema";
import { providerFailed } from "./refusal";

export async function refundPayment(
  ctx: { db: Db; psp: PspClient; ledger: Ledger; tenant: { id: string }; idempotency: RecoverableHandle<Db> },
  input: RefundInput,
) {
  const h = ctx.idempotency;
  const tenantId = ctx.tenant.id;
  const reserved = await h.phase("reserved", async (tx) => {
    // The amount counts against the limit from here on, so two refunds racing cannot both fit.
    const [p] = await tx
      .update(payments)
      .set({ amountRefundedMinor: sql`${payments.amountRefundedMinor} + ${input.amount}`, updatedAt: new Date() })
      .where(
        and(
          eq(payments.id, input.id),
          eq(payments.tenantId, tenantId),
          eq(payments.status, PaymentStatus.Succeeded),
          sql`${payments.amountRefundedMinor} + ${input.amount} <= ${payments.amountCapturedMinor}`,
        ),
      )
      .returning();
    if (!p) {
      const payment = await paymentOf(tx, tenantId, input.id);
      if (payment.status !== PaymentStatus.Succeeded) {
        throw new RuleViolationError("payment-not-refundable", `Only a captured payment can be refunded; this one is ${payment.status}.`, {
          paymentId: input.id,
        });
      }
      const left = payment.amountCapturedMinor - payment.amountRefundedMinor;
      throw new RuleViolationError(
        "refund-exceeds-captured",
        `Refunds may not exceed the captured amount: ${formatMinor(left)} ${payment.currency} is left to refund.`,
        {
          errors: [{ field: "amount", message: `must be at most ${formatMinor(left)}` }],
        },
      );
    }
    const refundId = newId("re");
    await tx.insert(refunds).values({
      id: refundId,
      tenantId,
      paymentId: p.id,
      amountMinor: input.amount,
      currency: p.currency,
      status: "pending",
      idempotencyKey: h.key,
    });
    return { refundId, chargeId: p.pspChargeId!, currency: p.currency };
  });
  const result = await ctx.psp.refund(reserved.chargeId, input.amount, h.downstreamKey);
  if (result.kind !== "ok") {
    return providerFailed(result, async () => {
      await h.phase("released", async (tx) => {
        await tx
          .update(payments)
          .set({ amountRefundedMinor: sql`${payments.amountRefundedMinor} - ${input.amount}`, updatedAt: new Date() })
          .where(eq(payments.id, input.id));
        await tx.update(refunds).set({ status: "failed" }).where(eq(refunds.id, reserved.refundId));
        return null;
      });
    });
  }
  await h.phase("settled", async (tx) => {
    await tx.update(refunds).set({ status: "succeeded", pspRefundId: result.refund.id }).where(eq(refunds.id, reserved.refundId));
    await ctx.ledger.post(tx, {
      tenantId,
      currency: reserved.currency,
      cause: { idempotencyKey: h.key },
      links: { paymentId: input.id },
      lines: transfer(Book.refunds, Book.pspClearing, input.amount),
    });
    return null;
  });
  const [refund] = await ctx.db.select().from(refunds).where(eq(refunds.id, reserved.refundId));
  return {
    id: refund!.id,
    paymentId: refund!.paymentId,
    amount: formatMinor(refund!.amountMinor),
    currency: refund!.currency,
    status: refund!.status,
    createdAt: refund!.createdAt.toISOString(),
  };
}
