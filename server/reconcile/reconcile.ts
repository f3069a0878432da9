/**
 * Reconciliation: the ledger against the provider's charges, per payment.
 * For every payment the provider should hold a charge (matched by the
 * `reference` we send, the payment id) whose captured and refunded amounts
 * equal what the ledger says; every charge should belong to a payment, and
 * no payment may have two; a payment still `pending` after its client's
 * lease and the completer's whole budget is an outcome nobody is going to
 * settle (younger ones are in flight: the completer finishes them); every
 * ledger transaction must balance; flagged webhook events need a person.
 */
import { and, eq, isNotNull, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { ledgerEntries, payments, webhookEvents } from "../../db/schema";
import { Book } from "../ledger/post";
import { formatMinor } from "../money";
import type { ChargeWithRefunds } from "../psp/client";

export type Difference = { kind: string; paymentId?: string; chargeId?: string; eventId?: string; transactionId?: string; detail: string };

export type ReconcileOptions = {
  tenantId?: string;
  /**
   * How long a payment may stay pending before it is flagged: the lease of
   * its client's attempt plus the completer's budget (server/keys/completer.ts,
   * `settleWithinMs`). 0 flags every pending payment.
   */
  pendingGraceMs?: number;
  /**
   * Payments not to reconcile, with every charge that names them: the
   * failure lab's, whose unprotected twin double-charges on purpose. The
   * caller says how many it left out.
   */
  leaveOut?: ReadonlySet<string>;
};

export async function reconcile(db: Db, allCharges: ChargeWithRefunds[], options: ReconcileOptions = {}): Promise<Difference[]> {
  const leftOut = (paymentId: string | null | undefined) => paymentId != null && options.leaveOut?.has(paymentId) === true;
  const charges = allCharges.filter((c) => !leftOut(c.reference));
  const byTenant = (column: typeof payments.tenantId | typeof ledgerEntries.tenantId | typeof webhookEvents.tenantId) =>
    options.tenantId ? eq(column, options.tenantId) : undefined;
  // The age on the database's clock, the one every lease and backoff is measured by.
  const rows = (
    await db
      .select({ payment: payments, ageMs: sql<number>`(extract(epoch from now() - ${payments.createdAt}) * 1000)::float8` })
      .from(payments)
      .where(byTenant(payments.tenantId))
  )
    .map((r) => ({ ...r.payment, ageMs: Number(r.ageMs) }))
    .filter((p) => !leftOut(p.id));
  const entries = await db.select().from(ledgerEntries).where(byTenant(ledgerEntries.tenantId));
  const flagged = await db
    .select()
    .from(webhookEvents)
    .where(and(byTenant(webhookEvents.tenantId), isNotNull(webhookEvents.flag)));
  const differences: Difference[] = [];

  const byTransaction = new Map<string, number>();
  for (const e of entries)
    byTransaction.set(
      e.transactionId,
      (byTransaction.get(e.transactionId) ?? 0) + (e.direction === "debit" ? e.amountMinor : -e.amountMinor),
    );
  for (const [transactionId, net] of byTransaction) {
    if (net !== 0)
      differences.push({ kind: "unbalanced_transaction", transactionId, detail: `debits and credits differ by ${formatMinor(net)}` });
  }

  const sales = new Map<string, number>();
  const refunded = new Map<string, number>();
  for (const e of entries) {
    if (!e.paymentId) continue;
    if (e.ledgerAccount === Book.sales)
      sales.set(e.paymentId, (sales.get(e.paymentId) ?? 0) + (e.direction === "credit" ? e.amountMinor : -e.amountMinor));
    if (e.ledgerAccount === Book.refunds)
      refunded.set(e.paymentId, (refunded.get(e.paymentId) ?? 0) + (e.direction === "debit" ? e.amountMinor : -e.amountMinor));
  }

  // Every charge counts: a second one with the same reference is a double charge, not a replacement.
  const chargesByReference = new Map<string, ChargeWithRefunds[]>();
  for (const c of charges) if (c.reference) chargesByReference.set(c.reference, [...(chargesByReference.get(c.reference) ?? []), c]);
  const paymentIds = new Set(rows.map((p) => p.id));
  const graceMs = options.pendingGraceMs ?? 0;
  for (const p of rows) {
    const all = chargesByReference.get(p.id) ?? [];
    // The charge the payment recorded is the one to compare; any other with its reference is a duplicate.
    const charge = all.find((c) => c.id === p.pspChargeId) ?? all[0];
    for (const extra of all.filter((c) => c !== charge)) {
      differences.push({
        kind: "duplicate_charge",
        paymentId: p.id,
        chargeId: extra.id,
        detail: `a second charge of ${formatMinor(extra.amount)} for this payment (the first is ${charge!.id})`,
      });
    }
    const ledgerCaptured = sales.get(p.id) ?? 0;
    const ledgerRefunded = refunded.get(p.id) ?? 0;
    if (p.status === "pending" && p.ageMs >= graceMs) {
      differences.push({
        kind: "outcome_unknown",
        paymentId: p.id,
        chargeId: charge?.id,
        detail: `pending for ${Math.round(p.ageMs / 1000)} s, past the completer's budget: see its key in /admin`,
      });
    }
    if (!charge) {
      if (ledgerCaptured > 0)
        differences.push({
          kind: "missing_charge",
          paymentId: p.id,
          detail: `the ledger has ${formatMinor(ledgerCaptured)} captured, the provider no charge`,
        });
      continue;
    }
    const providerCaptured = charge.captured ? charge.amount : 0;
    if (providerCaptured !== ledgerCaptured) {
      differences.push({
        kind: "captured_mismatch",
        paymentId: p.id,
        chargeId: charge.id,
        detail: `ledger ${formatMinor(ledgerCaptured)}, provider ${formatMinor(providerCaptured)}`,
      });
    }
    if (charge.amountRefunded !== ledgerRefunded) {
      differences.push({
        kind: "refunded_mismatch",
        paymentId: p.id,
        chargeId: charge.id,
        detail: `ledger ${formatMinor(ledgerRefunded)}, provider ${formatMinor(charge.amountRefunded)}`,
      });
    }
    if (p.pspChargeId && p.pspChargeId !== charge.id) {
      differences.push({
        kind: "charge_id_mismatch",
        paymentId: p.id,
        chargeId: charge.id,
        detail: `the payment records ${p.pspChargeId}`,
      });
    }
  }
  // Charges nobody here asked for: only when looking at everything (a tenant filter cannot tell whose they are).
  if (!options.tenantId) {
    for (const c of charges) {
      if (!c.reference || !paymentIds.has(c.reference))
        differences.push({ kind: "unknown_charge", chargeId: c.id, detail: `reference ${c.reference ?? "(none)"} names no payment` });
    }
  }
  for (const e of flagged.filter((f) => !leftOut(f.paymentId)))
    differences.push({
      kind: `webhook_${e.flag}`,
      eventId: e.id,
      paymentId: e.paymentId ?? undefined,
      detail: `provider event ${e.type} could not be applied: ${e.flag}`,
    });
  return differences;
}
