/** Input and output of `webhooks.psp`: a provider event, tolerant of fields it does not know. */
import { z } from "zod";
import { refuseBadText } from "../input";

export const eventSchema = z
  .object({
    id: z.string().regex(/^evt_[A-Za-z0-9_]{1,100}$/),
    type: z.string().min(1).max(100),
    data: z.looseObject({ paymentId: z.string().max(64).optional(), amount: z.unknown().optional() }),
  })
  // Tolerant of unknown fields, but stored as JSON: text PostgreSQL cannot hold is still a 400.
  .superRefine(refuseBadText);

export const receivedSchema = z.object({ received: z.literal(true), duplicate: z.boolean() });
