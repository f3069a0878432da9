/** Express 5: tRPC's Express adapter mounted at /trpc. */
import { createExpressMiddleware } from "@trpc/server/adapters/express";
import express from "express";
import { answerHeaders, contextOf, headersOf, type AppRouter } from "./app.js";

export function expressApp(router: AppRouter) {
  const app = express();
  app.use(
    "/trpc",
    createExpressMiddleware({ router, createContext: ({ req }) => contextOf(headersOf(req.headers)), responseMeta: answerHeaders }),
  );
  return app;
}
