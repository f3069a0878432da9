/** `catalog.list`, and the storefront's `checkout.catalog` on its own base: the demo catalog every tenant starts with. */
import type { Db } from "../../db/client";
import { listProducts } from "./products";

export async function listCatalog(ctx: { db: Db }) {
  return { data: await listProducts(ctx.db) };
}
