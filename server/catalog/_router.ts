/** The product catalog: the demo catalog every tenant starts with. */
import { router, tenantProcedure } from "../trpc";
import { listCatalog } from "./list.handler";
import { listCatalogInput } from "./list.schema";
import { catalogSchema } from "./products";

export const catalogRouter = router({
  list: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/products", summary: "List the product catalog", tags: ["catalog"] } })
    .input(listCatalogInput)
    .output(catalogSchema)
    .query(({ ctx }) => listCatalog(ctx)),
});
