/** Input of `checkout.keyStatus`: the key the page sent. */
import { z } from "zod";
import { strictInput } from "../input";

export const keyStatusInput = strictInput({ key: z.string().min(1).max(255) });
