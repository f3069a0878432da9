import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { createContext } from "@/server/context";
import { toProblem } from "@/server/errors";
import { logger } from "@/server/logger";
import { appRouter } from "@/server/root";

export const dynamic = "force-dynamic";

const handler = (req: Request) =>
  fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext,
    // Lets the browser see what the middleware decided (Idempotent-Replayed),
    // and a 409's Retry-After (how long the holder's lease still runs), as REST sends it.
    responseMeta: ({ ctx, errors }) => {
      const headers = new Headers(ctx?.response.headers);
      const retryAfter = errors.map((error) => toProblem(error).retryAfter).find((s) => typeof s === "number");
      if (retryAfter !== undefined) headers.set("Retry-After", String(retryAfter));
      return { headers };
    },
    onError: ({ error, path }) => {
      if (error.code === "INTERNAL_SERVER_ERROR") logger.error({ err: error, path }, "tRPC call failed");
    },
  });

export { handler as GET, handler as POST };
