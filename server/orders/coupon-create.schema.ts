/** Input of `coupons.create`, and the code's format, which an order's `couponCode` shares. */
import { z } from "zod";
import { strictInput } from "../input";

export const couponCodeSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { error: "must be 1–64 letters, digits, _ or -" });

export const createCouponInput = strictInput({ code: couponCodeSchema, percentOff: z.number().int().min(1).max(100) });

export const couponSchema = z.object({ code: z.string(), percentOff: z.number(), redeemed: z.boolean() });
