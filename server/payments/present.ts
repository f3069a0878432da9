/** The payment as the API shows it: decimal strings at the edge, minor units inside. */
import { z } from "zod";
import { PaymentStatus, type payments } from "../../db/schema";
import { formatMinor } from "../money";

export const paymentSchema = z.object({
  id: z.string(),
  status: z.enum([
    PaymentStatus.Pending,
    PaymentStatus.Succeeded,
    PaymentStatus.RequiresCapture,
    PaymentStatus.Canceled,
    PaymentStatus.Failed,
  ]),
  amount: z.string(),
  currency: z.string(),
  destination: z.string(),
  captureMethod: z.enum(["automatic", "manual"]),
  amountCaptured: z.string(),
  amountRefunded: z.string(),
  failureReason: z.string().nullable(),
  createdAt: z.iso.datetime(),
});
export type PaymentView = z.infer<typeof paymentSchema>;

export function presentPayment(p: typeof payments.$inferSelect): PaymentView {
  return {
    id: p.id,
    status: p.status,
    amount: formatMinor(p.amountMinor),
    currency: p.currency,
    destination: p.destination,
    captureMethod: p.capture,
    amountCaptured: formatMinor(p.amountCapturedMinor),
    amountRefunded: formatMinor(p.amountRefundedMinor),
    failureReason: p.failureReason,
    createdAt: p.createdAt.toISOString(),
  };
}

/** Where money may be sent: an account id as the provider names them. */
export const destinationSchema = z
  .string()
  .regex(/^acct_[A-Za-z0-9_]{1,100}$/, { error: 'must be a provider account id such as "acct_test_123"' });
