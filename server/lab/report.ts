/**
 * What a lab run really did, counted after the fact: the run's payments
 * (found by its key, or listed by the twin), the provider's own records of
 * charges and refunds for them, and the ledger movements written for them.
 * Nothing here is predicted from the scenario.
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { ledgerEntries, payments, PaymentStatus } from "../../db/schema";
import { Book } from "../ledger/post";
import type { PspClient } from "../psp/client";
import { naivePaymentIdsOf, type LabRun } from "./runs";
import { labKeyOf, LabTarget } from "./scenarios";

export type LabCounts = {
  payments: number;
  paymentIds: string[];
  /** Payments still pending: not charged, not declined (a payment nobody finished). */
  pendingPayments: number;
  providerCharges: number;
  providerRefunds: number;
  chargeMovements: number;
  refundMovements: number;
};

export async function paymentIdsOf(db: Db, run: LabRun, tenantId: string): Promise<string[]> {
  if (run.target === LabTarget.Naive) return naivePaymentIdsOf(run);
  const rows = await db
    .select({ id: payments.id })
    .from(payments)
    .where(and(eq(payments.tenantId, tenantId), eq(payments.idempotencyKey, labKeyOf(run.id))));
  return rows.map((r) => r.id);
}

/**
 * Every payment the failure lab made, for `npm run reconcile` to leave out
 * and count: the protected side's (under a run's key, on the lab's tenant)
 * and the twin's (listed by its runs, kept for a day).
 */
export async function labPaymentIds(db: Db, tenantId: string): Promise<Set<string>> {
  const rows = await db.execute<{ id: string }>(sql`
    select id from ${payments} where ${payments.tenantId} = ${tenantId} and ${payments.idempotencyKey} like ${labKeyOf("%")}
    union select unnest(naive_payment_ids) from lab_runs`);
  return new Set(rows.map((r) => r.id));
}

export async function countRun({ db, psp }: { db: Db; psp: PspClient }, run: LabRun, tenantId: string): Promise<LabCounts> {
  const ids = await paymentIdsOf(db, run, tenantId);
  if (ids.length === 0)
    return {
      payments: 0,
      paymentIds: [],
      pendingPayments: 0,
      providerCharges: 0,
      providerRefunds: 0,
      chargeMovements: 0,
      refundMovements: 0,
    };
  const pending = await db
    .select({ id: payments.id })
    .from(payments)
    .where(and(inArray(payments.id, ids), eq(payments.status, PaymentStatus.Pending)));
  const listed = await psp.listCharges();
  if (listed.kind !== "ok") throw new Error("The provider did not list its charges.");
  const charges = listed.charges.filter((c) => c.reference !== null && ids.includes(c.reference));
  const entries = await db
    .select({ transactionId: ledgerEntries.transactionId, account: ledgerEntries.ledgerAccount, direction: ledgerEntries.direction })
    .from(ledgerEntries)
    .where(inArray(ledgerEntries.paymentId, ids));
  const movementsWhere = (account: string, direction: "debit" | "credit") =>
    new Set(entries.filter((e) => e.account === account && e.direction === direction).map((e) => e.transactionId)).size;
  return {
    payments: ids.length,
    paymentIds: ids,
    pendingPayments: pending.length,
    providerCharges: charges.length,
    providerRefunds: charges.reduce((n, c) => n + c.refunds.length, 0),
    chargeMovements: movementsWhere(Book.sales, "credit"),
    refundMovements: movementsWhere(Book.refunds, "debit"),
  };
}
