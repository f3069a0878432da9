/** The app router: one sub-router per domain. */
import { catalogRouter } from "./catalog/router";
import { createCallerFactory, router } from "./trpc";

export const appRouter = router({
  catalog: catalogRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
