/** Input of `payments.create`: an amount, its currency, where it goes, and whether to capture at once. */
import { z } from "zod";
import { strictInput } from "../input";
import { amountSchema, currencySchema } from "../money";
import { destinationSchema } from "./present";

export const createPaymentInput = strictInput({
  amount: amountSchema,
  currency: currencySchema,
  destination: destinationSchema,
  capture: z.boolean().default(true),
});
