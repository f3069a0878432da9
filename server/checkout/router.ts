/**
 * The storefront's procedures for the checkout pages: the demo tenant,
 * server-side. `pay` is the same recoverable checkout as POST /v1/orders;
 * `keyStatus` lets the page show what the server saw of its key.
 */
import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { idInput, strictInput } from "../input";
import { idempotencyKeys } from "../idempotency";
import { listCatalog } from "../catalog/list.handler";
import { catalogSchema } from "../catalog/products";
import { tracedPhases } from "../lab/trace";
import { quoteOf, quoteSchema, cartItemsSchema } from "../orders/pricing";
import { createOrder } from "../orders/create.handler";
import { cartSchema } from "../orders/create.schema";
import { getOrder } from "../orders/get.handler";
import { orderSchema } from "../orders/order";
import { router, storefrontProcedure, storefrontRecoverableProcedure } from "../trpc";

export const checkoutRouter = router({
  catalog: storefrontProcedure.output(catalogSchema).query(({ ctx }) => listCatalog(ctx)),

  /** The cart's amounts as the order will charge them (before a coupon): the page shows these, it computes no money. */
  quote: storefrontProcedure
    .input(strictInput({ items: cartItemsSchema }))
    .output(quoteSchema)
    .query(({ ctx, input }) => quoteOf(ctx.db, input.items)),

  pay: storefrontRecoverableProcedure(cartSchema, { resumable: true })
    .output(orderSchema)
    .mutation(({ ctx, input }) => createOrder({ ...ctx, idempotency: tracedPhases(ctx.idempotency) }, input)),

  order: storefrontProcedure
    .input(idInput)
    .output(orderSchema)
    .query(({ ctx, input }) => getOrder(ctx, input)),

  keyStatus: storefrontProcedure
    .input(strictInput({ key: z.string().min(1).max(255) }))
    .query(async ({ ctx, input }) => {
      const [row] = await ctx.db
        .select({
          state: idempotencyKeys.state,
          fence: idempotencyKeys.fence,
          recoveryPoint: idempotencyKeys.recoveryPoint,
          responseStatus: idempotencyKeys.responseStatus,
          replayCount: idempotencyKeys.replayCount,
          fingerprint: idempotencyKeys.fingerprint,
        })
        .from(idempotencyKeys)
        .where(and(eq(idempotencyKeys.tenantId, ctx.tenant.id), eq(idempotencyKeys.key, input.key)));
      return row ?? null;
    }),
});
