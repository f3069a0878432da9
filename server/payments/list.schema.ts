/** Input of `payments.list`: a page size. */
import { z } from "zod";
import { strictInput } from "../input";

export const listPaymentsInput = strictInput({ limit: z.coerce.number().int().min(1).max(100).default(10) });
