/** Input naming one idempotency key: keys are unique per tenant, never globally. */
import { z } from "zod";
import { strictInput } from "../input";

export const keyRefInput = strictInput({
  tenantId: z.string().min(1).max(100),
  key: z.string().min(1).max(255),
});
export type KeyRefInput = z.infer<typeof keyRefInput>;

/** Optionally one tenant, for counts, the activity chart and purges. */
export const tenantScopeInput = strictInput({ tenantId: z.string().min(1).max(100).optional() });
export type TenantScopeInput = z.infer<typeof tenantScopeInput>;
