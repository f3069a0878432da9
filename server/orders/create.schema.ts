/** Input of `orders.create` and the storefront's `checkout.pay`: a cart of catalog items, an optional coupon, where the money goes. */
import { destinationSchema } from "../payments/present";
import { strictInput } from "../input";
import { couponCodeSchema } from "./coupon-create.schema";
import { cartItemsSchema } from "./pricing";

/** Where the demo shop's money goes when the caller names no destination. */
export const SHOP_DESTINATION = "acct_demo_shop";

export const cartSchema = strictInput({
  items: cartItemsSchema,
  couponCode: couponCodeSchema.optional(),
  /** Beyond the contract: which provider account is charged; the checkout demo uses the test destinations. */
  destination: destinationSchema.default(SHOP_DESTINATION),
});
