/** Server-side tRPC calls for pages: the demo tenant, no token in the browser. */
import { DEMO_TENANT } from "../db/seed";
import { createCaller, createContextInner } from "./app";

export async function demoCaller() {
  return createCaller(await createContextInner({ tenant: DEMO_TENANT }));
}
