/** Input and output of `ledger.list`: the cause (an idempotency key or a webhook event), and the entries it caused. */
import { z } from "zod";
import { exactlyOne, strictInput } from "../input";

export const listLedgerInput = exactlyOne(
  strictInput({ idempotencyKey: z.string().min(1).max(255).optional(), eventId: z.string().min(1).max(255).optional() }),
  ["idempotencyKey", "eventId"],
);

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
  createdAt: z.iso.datetime(),
});
