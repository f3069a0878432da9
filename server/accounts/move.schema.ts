/** Input of `accounts.deposit` and `accounts.withdraw`: the account, and an amount in its currency. */
import { z } from "zod";
import { recordId, strictInput } from "../input";
import { amountSchema, currencySchema } from "../money";

export const moveInput = strictInput({ id: recordId, amount: amountSchema, currency: currencySchema });
export type MoveInput = z.infer<typeof moveInput>;
