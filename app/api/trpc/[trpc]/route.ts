import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { createContext } from "@/server/context";
import { logger } from "@/server/logger";
import { appRouter } from "@/server/root";
import { responseMeta } from "./response-meta";

export const dynamic = "force-dynamic";

const handler = (req: Request) =>
  fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext,
    responseMeta,
    onError: ({ error, path }) => {
      if (error.code === "INTERNAL_SERVER_ERROR") logger.error({ err: error, path }, "tRPC call failed");
    },
  });

export { handler as GET, handler as POST };
