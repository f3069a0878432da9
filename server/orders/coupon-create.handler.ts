/** `coupons.create`: a single-use coupon, created once per code (redeemed at most once, by placeOrder's conditional UPDATE). */
import type { z } from "zod";
import type { Db } from "../../db/client";
import { coupons } from "../../db/schema";
import { RuleViolationError } from "../errors";
import type { createCouponInput } from "./coupon-create.schema";

export async function createCoupon(ctx: { tenant: { id: string }; idempotency: { tx: Db } }, input: z.infer<typeof createCouponInput>) {
  const [created] = await ctx.idempotency.tx
    .insert(coupons)
    .values({ tenantId: ctx.tenant.id, code: input.code, percentOff: input.percentOff })
    .onConflictDoNothing()
    .returning();
  if (!created) {
    throw new RuleViolationError("coupon-exists", `A coupon with the code ${input.code} already exists.`, {
      errors: [{ field: "code", message: "is taken" }],
    });
  }
  return { code: created.code, percentOff: created.percentOff, redeemed: false };
}
