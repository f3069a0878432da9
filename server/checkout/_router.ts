/**
 * The storefront's procedures for the checkout pages: the demo tenant,
 * server-side. Catalog, pay and order mount the same handlers as
 * catalog.list, orders.create and orders.get on the storefront's base;
 * `quote` prices the cart for the page; `keyStatus` lets the page show what
 * the server saw of its key.
 */
import { idInput } from "../input";
import { listCatalog } from "../catalog/list.handler";
import { catalogSchema } from "../catalog/products";
import { createOrder } from "../orders/create.handler";
import { cartSchema } from "../orders/create.schema";
import { getOrder } from "../orders/get.handler";
import { orderSchema } from "../orders/order";
import { quoteOf, quoteSchema } from "../orders/pricing";
import { router, storefrontProcedure, storefrontRecoverableProcedure } from "../trpc";
import { keyStatus } from "./key-status.handler";
import { keyStatusInput } from "./key-status.schema";
import { quoteInput } from "./quote.schema";

export const checkoutRouter = router({
  catalog: storefrontProcedure.output(catalogSchema).query(({ ctx }) => listCatalog(ctx)),

  /** The cart's amounts as the order will charge them (before a coupon): the page shows these, it computes no money. */
  quote: storefrontProcedure
    .input(quoteInput)
    .output(quoteSchema)
    .query(({ ctx, input }) => quoteOf(ctx.db, input.items)),

  pay: storefrontRecoverableProcedure(cartSchema, { resumable: true })
    .output(orderSchema)
    .mutation(({ ctx, input }) => createOrder(ctx, input)),

  order: storefrontProcedure
    .input(idInput)
    .output(orderSchema)
    .query(({ ctx, input }) => getOrder(ctx, input)),

  keyStatus: storefrontProcedure.input(keyStatusInput).query(({ ctx, input }) => keyStatus(ctx, input)),
});
