/** Checkout: coupons and orders (a cart of catalog items, an optional single-use coupon, one payment). */
import { idInput } from "../input";
import { idempotentProcedure, recoverableProcedure, router, tenantProcedure } from "../trpc";
import { createCoupon } from "./coupon-create.handler";
import { couponSchema, createCouponInput } from "./coupon-create.schema";
import { createOrder } from "./create.handler";
import { cartSchema } from "./create.schema";
import { getOrder } from "./get.handler";
import { orderSchema } from "./order";

export const couponsRouter = router({
  create: idempotentProcedure(createCouponInput)
    .meta({
      rest: {
        method: "POST",
        path: "/v1/coupons",
        status: 201,
        summary: "Create a single-use coupon",
        tags: ["orders"],
        refusals: ["coupon-exists"],
      },
    })
    .output(couponSchema)
    .mutation(({ ctx, input }) => createCoupon(ctx, input)),
});

export const ordersRouter = router({
  create: recoverableProcedure(cartSchema, { resumable: true })
    .meta({
      rest: {
        method: "POST",
        path: "/v1/orders",
        status: 201,
        summary: "Place an order and pay for it",
        tags: ["orders"],
        refusals: ["coupon-unknown", "coupon-redeemed", "mixed-currencies", "payment-declined", "provider-refused", "upstream-unavailable"],
      },
    })
    .output(orderSchema)
    .mutation(({ ctx, input }) => createOrder(ctx, input)),

  get: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/orders/{id}", summary: "An order with its payment", tags: ["orders"] } })
    .input(idInput)
    .output(orderSchema)
    .query(({ ctx, input }) => getOrder(ctx, input)),
});
