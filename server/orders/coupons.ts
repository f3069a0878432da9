/** Single-use coupons: created once per code, redeemed at most once (a conditional UPDATE in the order's transaction). */
import { z } from "zod";
import { strictInput } from "../input";
import { coupons } from "../../db/schema";
import { RuleViolationError } from "../errors";
import { idempotentProcedure } from "../trpc";

export const couponCodeSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { error: "must be 1–64 letters, digits, _ or -" });

export const createCoupon = idempotentProcedure(strictInput({ code: couponCodeSchema, percentOff: z.number().int().min(1).max(100) }))
  .meta({ rest: { method: "POST", path: "/v1/coupons", status: 201, summary: "Create a single-use coupon", tags: ["orders"] } })
  .output(z.object({ code: z.string(), percentOff: z.number(), redeemed: z.boolean() }))
  .mutation(async ({ ctx, input }) => {
    const [created] = await ctx.idempotency.tx
      .insert(coupons)
      .values({ tenantId: ctx.tenant.id, code: input.code, percentOff: input.percentOff })
      .onConflictDoNothing()
      .returning();
    if (!created) {
      throw new RuleViolationError("coupon-exists", `A coupon with the code ${input.code} already exists.`, { errors: [{ field: "code", message: "is taken" }] });
    }
    return { code: created.code, percentOff: created.percentOff, redeemed: false };
  });
