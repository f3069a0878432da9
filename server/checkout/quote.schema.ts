/** Input of `checkout.quote`: the cart's items, as an order names them. */
import { strictInput } from "../input";
import { cartItemsSchema } from "../orders/pricing";

export const quoteInput = strictInput({ items: cartItemsSchema });
