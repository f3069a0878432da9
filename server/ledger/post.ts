/**
 * Posting to the double-entry ledger. A movement is a set of lines that must
 * balance (debits = credits, one currency); it is written in the caller's
 * transaction, so it commits with the business change or not at all, tagged
 * with the idempotency key or webhook event that caused it.
 */
import type { Db } from "../../db/client";
import { ledgerEntries } from "../../db/schema";
import { newId } from "../ids";
import { logger } from "../logger";

export type LedgerLine = { account: string; direction: "debit" | "credit"; amountMinor: number };

export type Movement = {
  tenantId: string;
  currency: string;
  cause: { idempotencyKey: string } | { eventId: string };
  links: { paymentId?: string; accountId?: string; orderId?: string };
  lines: LedgerLine[];
};

export class UnbalancedMovementError extends Error {
  override readonly name = "UnbalancedMovementError";
}

/** The book accounts money moves between. */
export const Book = {
  /** What the provider owes us for captured charges, less refunds. */
  pspClearing: "psp_clearing",
  sales: "sales",
  refunds: "refunds",
  /** Money deposited into customer accounts from outside. */
  cash: "cash",
  customerBalance: (accountId: string) => `customer_balance:${accountId}`,
} as const;

/** A movement as written (not yet committed: it commits with the caller's transaction). */
export type Posted = Movement & { transactionId: string; amountMinor: number };

export type Ledger = { post: (tx: Db, m: Movement) => Promise<string> };

/**
 * The ledger as the composition root builds it: `observe` (the failure lab's
 * diagram) is told of every movement written. An observer that throws is
 * logged and never breaks the write: the money path must not depend on it.
 */
export function createLedger(observe: (posted: Posted) => void = () => undefined): Ledger {
  return {
    async post(tx, m) {
      const debits = m.lines.filter((l) => l.direction === "debit").reduce((s, l) => s + l.amountMinor, 0);
      const credits = m.lines.filter((l) => l.direction === "credit").reduce((s, l) => s + l.amountMinor, 0);
      if (debits !== credits || debits <= 0 || m.lines.some((l) => !Number.isSafeInteger(l.amountMinor) || l.amountMinor <= 0)) {
        throw new UnbalancedMovementError(`A movement must balance with positive amounts: debits ${debits}, credits ${credits}`);
      }
      const transactionId = newId("ltx");
      const cause = "idempotencyKey" in m.cause ? { idempotencyKey: m.cause.idempotencyKey } : { eventId: m.cause.eventId };
      await tx.insert(ledgerEntries).values(
        m.lines.map((l) => ({
          id: newId("le"),
          tenantId: m.tenantId,
          transactionId,
          ledgerAccount: l.account,
          direction: l.direction,
          amountMinor: l.amountMinor,
          currency: m.currency,
          ...cause,
          ...m.links,
        })),
      );
      try {
        observe({ ...m, transactionId, amountMinor: debits });
      } catch (err) {
        logger.warn({ err }, "the ledger's observer failed");
      }
      return transactionId;
    },
  };
}

/** Two lines: `amount` moves from the credited book to the debited one. */
export const transfer = (debit: string, credit: string, amountMinor: number): LedgerLine[] => [
  { account: debit, direction: "debit", amountMinor },
  { account: credit, direction: "credit", amountMinor },
];
