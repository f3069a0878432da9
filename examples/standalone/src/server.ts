/**
 * The HTTP side: tRPC's standalone adapter. The context carries what the
 * middleware needs (the request's headers, the scope of its keys, where it
 * says what it did), and `responseMeta` sends the middleware's headers
 * (`Idempotent-Replayed: true` on a replay) with the answer.
 */
import { createHTTPServer } from "@trpc/server/adapters/standalone";
import type { AppRouter } from "./app.js";

export function createServer(router: AppRouter) {
  return createHTTPServer({
    router,
    createContext: ({ req }) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
      // Keys are scoped by tenant; a single-tenant app passes one constant scope.
      return { headers, tenant: { id: "example" }, response: { headers: new Headers() } };
    },
    responseMeta: ({ ctx }) => ({ headers: ctx ? Object.fromEntries(ctx.response.headers) : {} }),
  });
}
