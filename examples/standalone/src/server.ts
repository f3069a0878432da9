/**
 * The HTTP side: tRPC's standalone adapter. The context carries what the
 * middleware needs (the request's headers, the scope of its keys and the
 * list it adds its decisions to), and `responseMeta` sends the headers of
 * what it decided (`Idempotent-Replayed: true` on a replay, a 409's
 * `Retry-After`).
 */
import { outcomeHeaders } from "@exactly-once/trpc";
import { createHTTPServer } from "@trpc/server/adapters/standalone";
import type { AppRouter } from "./app.js";

export function createServer(router: AppRouter) {
  return createHTTPServer({
    router,
    createContext: ({ req }) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
      // Keys are scoped by tenant; a single-tenant app passes one constant scope.
      return { headers, tenant: { id: "example" }, outcomes: [] };
    },
    responseMeta: ({ ctx }) => ({ headers: outcomeHeaders(ctx) }),
  });
}
