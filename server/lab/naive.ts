/**
 * The unprotected twin, for the failure lab only (demo mode): the checkout
 * as it would be written without an idempotency key. Every call places a
 * payment, charges the provider under a fresh downstream key (so the
 * provider cannot recognise a repeat) and writes the ledger; every webhook
 * delivery is applied, duplicate or not. The double charges it causes are
 * real rows and real provider charges, counted by report.ts.
 */
import { randomUUID } from "node:crypto";
import { eq, inArray, sql } from "drizzle-orm";
import type { Database, Db } from "../../db/client";
import { payments, PaymentStatus, products, refunds } from "../../db/schema";
import { DomainError, PaymentDeclinedError, UpstreamUnavailableError } from "../errors";
import { newId } from "../ids";
import { Book, transfer, type Ledger } from "../ledger/post";
import type { PspClient } from "../psp/client";
import { takeNaiveCall, type LabRun } from "./runs";
import { naiveCallsOf } from "./scenarios";

export type NaiveCart = { items: { sku: string; quantity: number }[]; destination: string };

export async function naivePay(
  { db, pool, psp, ledger }: { db: Db; pool: Pick<Database, "transaction">; psp: PspClient; ledger: Ledger },
  run: LabRun,
  tenantId: string,
  cart: NaiveCart,
) {
  const skus = cart.items.map((i) => i.sku);
  const found = await db.select().from(products).where(inArray(products.sku, skus));
  const price = new Map(found.map((p) => [p.sku, p]));
  const amountMinor = cart.items.reduce((sum, i) => sum + (price.get(i.sku)?.priceMinor ?? 0) * i.quantity, 0);
  const currency = found[0]?.currency ?? "EUR";
  const paymentId = newId("pay");
  if (!(await takeNaiveCall(run, paymentId))) {
    throw new DomainError(
      "lab-calls-used-up",
      422,
      `This naive run has sent the ${naiveCallsOf(run.scenario)} checkout(s) its scenario needs; start a new run.`,
    );
  }
  await db.insert(payments).values({
    id: paymentId,
    tenantId,
    status: PaymentStatus.Pending,
    amountMinor,
    currency,
    destination: cart.destination,
    capture: "automatic",
  });

  // The lab's provider decorator stops this worker here in a crash run, as it does the protected checkout's.
  const result = await psp.charge(
    { amount: amountMinor, currency, destination: cart.destination, capture: true, reference: paymentId },
    randomUUID(),
  );
  if (result.kind === "unknown") throw new UpstreamUnavailableError("The payment provider did not answer.", { cause: result.cause });
  if (result.kind !== "ok")
    throw new PaymentDeclinedError(result.kind === "declined" ? result.reason : result.type, "The payment was refused.", { paymentId });

  await pool.transaction(async (tx) => {
    await tx
      .update(payments)
      .set({ status: PaymentStatus.Succeeded, pspChargeId: result.charge.id, amountCapturedMinor: amountMinor, updatedAt: new Date() })
      .where(eq(payments.id, paymentId));
    // The ledger wants a cause on every movement; the twin has no key, so each call is a cause of its own.
    await ledger.post(tx, {
      tenantId,
      currency,
      cause: { idempotencyKey: `naive-${paymentId}` },
      links: { paymentId },
      lines: transfer(Book.pspClearing, Book.sales, amountMinor),
    });
  });
  return { paymentId, amountMinor, currency };
}

/** Applies a refund event with no record of events already seen: a redelivery refunds again. */
export async function naiveWebhook(
  { pool, ledger }: { pool: Pick<Database, "transaction">; ledger: Ledger },
  event: { id: string; paymentId: string; amount: number },
) {
  await pool.transaction(async (tx) => {
    const [payment] = await tx
      .update(payments)
      .set({ amountRefundedMinor: sql`${payments.amountRefundedMinor} + ${event.amount}`, updatedAt: new Date() })
      .where(eq(payments.id, event.paymentId))
      .returning();
    if (!payment) return;
    await tx.insert(refunds).values({
      id: newId("re"),
      tenantId: payment.tenantId,
      paymentId: payment.id,
      amountMinor: event.amount,
      currency: payment.currency,
      status: "succeeded",
      eventId: event.id,
    });
    await ledger.post(tx, {
      tenantId: payment.tenantId,
      currency: payment.currency,
      cause: { eventId: event.id },
      links: { paymentId: payment.id },
      lines: transfer(Book.refunds, Book.pspClearing, event.amount),
    });
  });
}
