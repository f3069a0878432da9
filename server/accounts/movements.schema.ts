/** Input of `accounts.movements`: the account and a page size. */
import { z } from "zod";
import { recordId, strictInput } from "../input";

export const movementsInput = strictInput({ id: recordId, limit: z.coerce.number().int().min(1).max(100).default(10) });
