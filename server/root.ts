/** The app router: one sub-router per domain. */
import { adminRouter } from "./admin/_router";
import { accountsRouter } from "./accounts/_router";
import { catalogRouter } from "./catalog/_router";
import { checkoutRouter } from "./checkout/_router";
import { labRouter } from "./lab/router";
import { ledgerRouter } from "./ledger/_router";
import { couponsRouter, ordersRouter } from "./orders/_router";
import { paymentsRouter } from "./payments/_router";
import { webhooksRouter } from "./webhooks/_router";
import { createCallerFactory, router } from "./trpc";

export const appRouter = router({
  catalog: catalogRouter,
  payments: paymentsRouter,
  accounts: accountsRouter,
  coupons: couponsRouter,
  orders: ordersRouter,
  ledger: ledgerRouter,
  webhooks: webhooksRouter,
  checkout: checkoutRouter,
  admin: adminRouter,
  lab: labRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
