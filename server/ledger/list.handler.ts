/** `ledger.list`: the tenant's ledger entries one idempotency key or webhook event caused, oldest first. */
import { and, asc, eq } from "drizzle-orm";
import type { z } from "zod";
import type { Db } from "../../db/client";
import { ledgerEntries } from "../../db/schema";
import { formatMinor } from "../money";
import type { listLedgerInput } from "./list.schema";

export async function listLedger(ctx: { db: Db; tenant: { id: string } }, input: z.infer<typeof listLedgerInput>) {
  const cause = input.idempotencyKey ? eq(ledgerEntries.idempotencyKey, input.idempotencyKey) : eq(ledgerEntries.eventId, input.eventId!);
  const rows = await ctx.db
    .select()
    .from(ledgerEntries)
    .where(and(eq(ledgerEntries.tenantId, ctx.tenant.id), cause))
    .orderBy(asc(ledgerEntries.createdAt), asc(ledgerEntries.id));
  return {
    data: rows.map((r) => ({
      id: r.id,
      transactionId: r.transactionId,
      account: r.ledgerAccount,
      amount: formatMinor(r.amountMinor),
      currency: r.currency,
      direction: r.direction,
      idempotencyKey: r.idempotencyKey,
      eventId: r.eventId,
      paymentId: r.paymentId,
      accountId: r.accountId,
      orderId: r.orderId,
      createdAt: r.createdAt.toISOString(),
    })),
  };
}
