/** Input of `catalog.list`: nothing (an empty object or none), strictly. */
import { strictInput } from "../input";

export const listCatalogInput = strictInput({}).optional();
