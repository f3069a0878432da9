/** Input and output of `payments.refund`. */
import { z } from "zod";
import { strictInput } from "../input";
import { amountSchema } from "../money";

export const refundInput = strictInput({ id: z.string().min(1).max(64), amount: amountSchema });
export type RefundInput = z.infer<typeof refundInput>;

export const refundSchema = z.object({ id: z.string(), paymentId: z.string(), amount: z.string(), currency: z.string(), status: z.string(), createdAt: z.string() });
