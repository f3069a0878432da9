/** Input of `accounts.deposit` and `accounts.withdraw`: the account, and an amount in its currency. */
import { z } from "zod";
import { strictInput } from "../input";
import { amountSchema, currencySchema } from "../money";

export const moveInput = strictInput({ id: z.string().min(1).max(64), amount: amountSchema, currency: currencySchema });
export type MoveInput = z.infer<typeof moveInput>;
