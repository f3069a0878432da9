/**
 * Capture, void and refund. Each first reserves its change on the payment row
 * with one conditional UPDATE (so capture and void cannot both proceed, and
 * refunds can never add up past the captured amount), then asks the provider
 * with the key's downstream key, then records the outcome: three phases a
 * retry resumes from.
 */
import { and, eq, isNull, sql } from "drizzle-orm";
import { z } from "zod";
import { idInput, strictInput } from "../input";
import type { Db } from "../../db/client";
import { payments, PaymentStatus, refunds } from "../../db/schema";
import { RuleViolationError, UpstreamUnavailableError } from "../errors";
import { newId } from "../ids";
import { Book, postMovement, transfer } from "../ledger/post";
import { amountSchema, formatMinor } from "../money";
import { recoverableProcedure } from "../trpc";
import { paymentSchema, presentPayment } from "./present";
import { psp } from "./provider";
import { paymentOf } from "./queries";
import { providerRefused, refusalReason } from "./refusal";
import type { PspFailure } from "../psp/client";

/**
 * The provider did not do what was reserved. No answer: the outcome is
 * unknown, a retry asks again. A refusal is the provider's decision (say the
 * charge was refunded or voided at the provider first): the reservation is
 * given back in a phase of its own and the refusal is stored for the key.
 */
async function providerFailed(result: PspFailure, release: () => Promise<void>): Promise<never> {
  if (result.kind === "unknown") {
    throw new UpstreamUnavailableError("The payment provider did not answer. Retry with the same Idempotency-Key to finish.", { cause: result.cause });
  }
  await release();
  throw providerRefused(refusalReason(result));
}

/** Why the reservation touched no row, as a business refusal (never 409). */
async function refuseAction(db: Db, tenantId: string, id: string, action: "capture" | "void"): Promise<never> {
  const p = await paymentOf(db, tenantId, id);
  const detail = { paymentId: id, paymentStatus: p.status };
  if (p.status === PaymentStatus.Canceled || p.pendingAction === "void") {
    throw new RuleViolationError("payment-canceled", action === "capture" ? "This payment was voided; it cannot be captured." : "This payment is already voided.", detail);
  }
  if (p.status === PaymentStatus.Succeeded || p.pendingAction === "capture") {
    throw new RuleViolationError("payment-captured", action === "void" ? "This payment was captured; it cannot be voided." : "This payment is already captured.", detail);
  }
  throw new RuleViolationError("payment-not-authorized", `Only an authorized payment (requires_capture) can be ${action === "capture" ? "captured" : "voided"}; this one is ${p.status}.`, detail);
}

function settleAuthorization(action: "capture" | "void") {
  return recoverableProcedure(idInput, { resumable: true })
    .meta({
      rest: {
        method: "POST",
        path: `/v1/payments/{id}/${action}`,
        status: 200,
        summary: action === "capture" ? "Capture an authorized payment" : "Void an authorized payment",
        tags: ["payments"],
      },
    })
    .output(paymentSchema)
    .mutation(async ({ ctx, input }) => {
      const h = ctx.idempotency;
      const tenantId = ctx.tenant.id;
      const { chargeId } = await h.phase("reserved", async (tx) => {
        const [reserved] = await tx
          .update(payments)
          .set({ pendingAction: action, updatedAt: new Date() })
          .where(and(eq(payments.id, input.id), eq(payments.tenantId, tenantId), eq(payments.status, PaymentStatus.RequiresCapture), isNull(payments.pendingAction)))
          .returning();
        if (!reserved) return refuseAction(tx, tenantId, input.id, action);
        return { chargeId: reserved.pspChargeId! };
      });
      const result = action === "capture" ? await psp().capture(chargeId, h.downstreamKey) : await psp().void(chargeId, h.downstreamKey);
      if (result.kind !== "ok") {
        return providerFailed(result, async () => {
          await h.phase("released", async (tx) => {
            await tx.update(payments).set({ pendingAction: null, updatedAt: new Date() }).where(and(eq(payments.id, input.id), eq(payments.pendingAction, action)));
            return null;
          });
        });
      }
      await h.phase("settled", async (tx) => {
        const [p] = await tx
          .update(payments)
          .set(
            action === "capture"
              ? { status: PaymentStatus.Succeeded, amountCapturedMinor: sql`${payments.amountMinor}`, pendingAction: null, updatedAt: new Date() }
              : { status: PaymentStatus.Canceled, pendingAction: null, updatedAt: new Date() },
          )
          .where(eq(payments.id, input.id))
          .returning();
        if (action === "capture") {
          await postMovement(tx, {
            tenantId,
            currency: p!.currency,
            cause: { idempotencyKey: h.key },
            links: { paymentId: p!.id },
            lines: transfer(Book.pspClearing, Book.sales, p!.amountMinor),
          });
        }
        return null;
      });
      return presentPayment(await paymentOf(ctx.db, tenantId, input.id));
    });
}

export const captureProcedure = settleAuthorization("capture");
export const voidProcedure = settleAuthorization("void");

const refundSchema = z.object({ id: z.string(), paymentId: z.string(), amount: z.string(), currency: z.string(), status: z.string(), createdAt: z.string() });

export const refundProcedure = recoverableProcedure(strictInput({ id: z.string().min(1).max(64), amount: amountSchema }), { resumable: true })
  .meta({ rest: { method: "POST", path: "/v1/payments/{id}/refunds", status: 201, summary: "Refund part or all of a captured payment", tags: ["payments"] } })
  .output(refundSchema)
  .mutation(async ({ ctx, input }) => {
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
          throw new RuleViolationError("payment-not-refundable", `Only a captured payment can be refunded; this one is ${payment.status}.`, { paymentId: input.id });
        }
        const left = payment.amountCapturedMinor - payment.amountRefundedMinor;
        throw new RuleViolationError("refund-exceeds-captured", `Refunds may not exceed the captured amount: ${formatMinor(left)} ${payment.currency} is left to refund.`, {
          errors: [{ field: "amount", message: `must be at most ${formatMinor(left)}` }],
        });
      }
      const refundId = newId("re");
      await tx.insert(refunds).values({ id: refundId, tenantId, paymentId: p.id, amountMinor: input.amount, currency: p.currency, status: "pending", idempotencyKey: h.key });
      return { refundId, chargeId: p.pspChargeId!, currency: p.currency };
    });
    const result = await psp().refund(reserved.chargeId, input.amount, h.downstreamKey);
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
      await postMovement(tx, {
        tenantId,
        currency: reserved.currency,
        cause: { idempotencyKey: h.key },
        links: { paymentId: input.id },
        lines: transfer(Book.refunds, Book.pspClearing, input.amount),
      });
      return null;
    });
    const [refund] = await ctx.db.select().from(refunds).where(eq(refunds.id, reserved.refundId));
    return { id: refund!.id, paymentId: refund!.paymentId, amount: formatMinor(refund!.amountMinor), currency: refund!.currency, status: refund!.status, createdAt: refund!.createdAt.toISOString() };
  });
