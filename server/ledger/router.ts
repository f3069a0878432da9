/** GET /v1/ledger?idempotencyKey=K or ?eventId=E: the money movements a key (or webhook event) caused. */
import { and, asc, eq } from "drizzle-orm";
import { z } from "zod";
import { strictInput } from "../input";
import { ledgerEntries } from "../../db/schema";
import { InvalidFieldError } from "../errors";
import { formatMinor } from "../money";
import { router, tenantProcedure } from "../trpc";

export const ledgerEntrySchema = z.object({
  id: z.string(),
  transactionId: z.string(),
  account: z.string(),
  amount: z.string(),
  currency: z.string(),
  direction: z.enum(["debit", "credit"]),
  idempotencyKey: z.string().nullable(),
  eventId: z.string().nullable(),
  paymentId: z.string().nullable(),
  accountId: z.string().nullable(),
  orderId: z.string().nullable(),
  createdAt: z.string(),
});

export const ledgerRouter = router({
  list: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/ledger", summary: "The ledger entries an idempotency key or webhook event caused", tags: ["ledger"] } })
    .input(strictInput({ idempotencyKey: z.string().min(1).max(255).optional(), eventId: z.string().min(1).max(255).optional() }))
    .output(z.object({ data: z.array(ledgerEntrySchema) }))
    .query(async ({ ctx, input }) => {
      if (!input.idempotencyKey === !input.eventId) throw new InvalidFieldError("idempotencyKey", "give exactly one of idempotencyKey and eventId");
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
    }),
});
