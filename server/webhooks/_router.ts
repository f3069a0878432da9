/**
 * POST /v1/webhooks/psp: events the provider sends back, signed with
 * PSP_WEBHOOK_SECRET (signature.ts), processed once per event id
 * (psp.handler.ts). Every delivery answers 200.
 */
import { publicProcedure, router } from "../trpc";
import { receiveEvent } from "./psp.handler";
import { eventSchema, receivedSchema } from "./psp.schema";
import { checkSignature } from "./signature";

const signedProcedure = publicProcedure.use(async ({ ctx, next }) => {
  checkSignature(ctx);
  return next();
});

export const webhooksRouter = router({
  psp: signedProcedure
    .meta({
      rest: {
        method: "POST",
        path: "/v1/webhooks/psp",
        status: 200,
        summary: "Receive a signed provider event (processed once per event id)",
        tags: ["webhooks"],
        signed: true,
      },
    })
    .input(eventSchema)
    .output(receivedSchema)
    .mutation(({ ctx, input }) => receiveEvent(ctx, input)),
});
