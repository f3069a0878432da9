/** Input and output of `payments.refund`. */
import { z } from "zod";
import { recordId, strictInput } from "../input";
import { amountSchema } from "../money";

export const refundInput = strictInput({ id: recordId, amount: amountSchema });
export type RefundInput = z.infer<typeof refundInput>;

export const refundSchema = z.object({
  id: z.string(),
  paymentId: z.string(),
  amount: z.string(),
  currency: z.string(),
  status: z.string(),
  createdAt: z.iso.datetime(),
});
