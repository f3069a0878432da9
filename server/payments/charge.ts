/**
 * Charging through the provider inside a recoverable procedure: the payment
 * row exists (pending) before the call, and the call carries the key's
 * downstream key. A charge is recorded by the procedure's `finish`: its
 * writes, its answer and the key's completion commit together. A retry after
 * a crash or a timeout calls again with the same downstream key (the
 * provider answers with the original charge) and records it once. A decline
 * or another refusal by the provider fails the payment in a phase of its own
 * and is final for the key (stored, replayed, never retried by the
 * completer).
 */
import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { orders, payments, PaymentStatus, coupons } from "../../db/schema";
import { PaymentDeclinedError, UpstreamUnavailableError } from "../errors";
import type { Json, RecoverableHandle } from "@exactly-once/trpc";
import { Book, transfer, type Ledger } from "../ledger/post";
import type { PspClient } from "../psp/client";
import { providerRefused, refusalReason } from "./refusal";

/** What the "charged" phase stores for a refusal, so a resumed attempt refuses as the first did. */
type Refused = { outcome: "declined"; reason: string; message: string } | { outcome: "refused"; reason: string };

/** Charges, records the outcome and answers with `answer` (read in the recording transaction); a refusal is thrown. */
export async function chargeAndRecord<T extends Json>(
  { psp, ledger }: { psp: PspClient; ledger: Ledger },
  h: RecoverableHandle<Db>,
  p: {
    tenantId: string;
    paymentId: string;
    orderId?: string;
    amountMinor: number;
    currency: string;
    destination: string;
    capture: boolean;
  },
  answer: (tx: Db) => Promise<T>,
): Promise<T> {
  const result = await psp.charge(
    { amount: p.amountMinor, currency: p.currency, destination: p.destination, capture: p.capture, reference: p.paymentId },
    h.downstreamKey,
  );
  if (result.kind === "unknown") {
    throw new UpstreamUnavailableError(
      "The payment provider did not answer; the payment is pending. Retry with the same Idempotency-Key to finish it.",
      { cause: result.cause },
    );
  }

  if (result.kind !== "ok") {
    const refused = await h.phase<Refused>("charged", async (tx) => {
      const reason = refusalReason(result);
      await tx
        .update(payments)
        .set({ status: PaymentStatus.Failed, failureReason: reason, updatedAt: new Date() })
        .where(eq(payments.id, p.paymentId));
      if (p.orderId) {
        await tx.update(orders).set({ status: "payment_failed" }).where(eq(orders.id, p.orderId));
        // A failed order gives its coupon back: the next attempt may use it.
        await tx
          .update(coupons)
          .set({ redeemedOrderId: null, redeemedAt: null })
          .where(and(eq(coupons.tenantId, p.tenantId), eq(coupons.redeemedOrderId, p.orderId)));
      }
      return result.kind === "declined"
        ? { outcome: "declined", reason, message: result.message ?? "The payment was declined." }
        : { outcome: "refused", reason };
    });
    if (refused.outcome === "declined") {
      throw new PaymentDeclinedError(refused.reason, refused.message, {
        paymentId: p.paymentId,
        ...(p.orderId ? { orderId: p.orderId } : {}),
      });
    }
    throw providerRefused(refused.reason);
  }

  return h.finish("charged", async (tx) => {
    const captured = result.charge.status === "succeeded";
    await tx
      .update(payments)
      .set({
        status: captured ? PaymentStatus.Succeeded : PaymentStatus.RequiresCapture,
        pspChargeId: result.charge.id,
        amountCapturedMinor: captured ? p.amountMinor : 0,
        updatedAt: new Date(),
      })
      .where(eq(payments.id, p.paymentId));
    if (p.orderId) await tx.update(orders).set({ status: "paid" }).where(eq(orders.id, p.orderId));
    if (captured) {
      await ledger.post(tx, {
        tenantId: p.tenantId,
        currency: p.currency,
        cause: { idempotencyKey: h.key },
        links: { paymentId: p.paymentId, orderId: p.orderId },
        lines: transfer(Book.pspClearing, Book.sales, p.amountMinor),
      });
    }
    return answer(tx);
  });
}
