/** `orders.get`, and the storefront's `checkout.order`: one of the tenant's orders with its payment. */
import type { Db } from "../../db/client";
import { orderView } from "./order";

export const getOrder = (ctx: { db: Db; tenant: { id: string } }, input: { id: string }) => orderView(ctx.db, ctx.tenant.id, input.id);
