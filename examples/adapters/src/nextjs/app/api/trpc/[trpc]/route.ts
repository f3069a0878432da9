/**
 * Next.js App Router: this file is `app/api/trpc/[trpc]/route.ts` of a Next
 * app. Next calls the exported functions with the web `Request`; tRPC's fetch
 * adapter answers it, with the context the middleware reads and its headers.
 */
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { answerHeaders, contextOf, createRouter } from "../../../../../app.js";
import { sql } from "../../../../db.js";

const router = createRouter(sql);

const handler = (req: Request) =>
  fetchRequestHandler({ endpoint: "/api/trpc", req, router, createContext: () => contextOf(req.headers), responseMeta: answerHeaders });

export { handler as GET, handler as POST };
