/** GET /v1/ledger?idempotencyKey=K or ?eventId=E: the money movements a key (or webhook event) caused. */
import { z } from "zod";
import { router, tenantProcedure } from "../trpc";
import { listLedger } from "./list.handler";
import { ledgerEntrySchema, listLedgerInput } from "./list.schema";

export const ledgerRouter = router({
  list: tenantProcedure
    .meta({
      rest: {
        method: "GET",
        path: "/v1/ledger",
        summary: "The ledger entries an idempotency key or webhook event caused",
        tags: ["ledger"],
      },
    })
    .input(listLedgerInput)
    .output(z.object({ data: z.array(ledgerEntrySchema) }))
    .query(({ ctx, input }) => listLedger(ctx, input)),
});
