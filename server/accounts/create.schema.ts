/** Input of `accounts.create`: the one currency the account holds. */
import { strictInput } from "../input";
import { currencySchema } from "../money";

export const createAccountInput = strictInput({ currency: currencySchema });
