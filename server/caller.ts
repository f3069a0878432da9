/** Server-side tRPC calls for pages, each as one tenant resolved here, never a token in the browser. */
import { DEMO_TENANT } from "../db/seed";
import { app } from "./app";

/** As the demo tenant: the home page's look at the demo catalog every tenant starts with. */
export async function demoCaller() {
  return app.createCaller(await app.createContextInner({ tenant: DEMO_TENANT }));
}

/**
 * As the storefront's tenant (the demo tenant in demo mode, else the one
 * STOREFRONT_TENANT_ID names), for the shop's pages, every call of a page
 * as that one tenant; undefined while the storefront is off.
 */
export async function storefrontCaller() {
  const context = await app.createContextInner();
  const tenant = await context.auth.storefrontTenant();
  return tenant ? app.createCaller({ ...context, tenant }) : undefined;
}
