import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { createContext } from "@/server/context";
import { problemBody, publicProblem } from "@/server/errors";
import { readJsonBody } from "@/server/rest/body";
import { appRouter } from "@/server/root";

export const dynamic = "force-dynamic";

const handle = (req: Request) =>
  fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext,
    // Lets the browser see what the middleware decided (e.g. Idempotent-Replayed).
    responseMeta: ({ ctx }) => ({ headers: ctx?.response.headers }),
    // Internal errors are logged, with their request id, by the error formatter (server/errors.ts publicProblem).
  });

/**
 * Mutations go through the same body reader as REST (JSON only, 64 KiB,
 * UTF-8, no duplicate keys) before tRPC parses the text again: a form post
 * or an oversized body never reaches a procedure.
 */
async function POST(req: Request): Promise<Response> {
  let text: string;
  try {
    text = (await readJsonBody(req)).text;
  } catch (error) {
    const problem = publicProblem(error, { route: "trpc" });
    return new Response(problemBody(problem), { status: problem.status, headers: { "content-type": "application/problem+json", "cache-control": "no-store" } });
  }
  return handle(new Request(req.url, { method: "POST", headers: req.headers, body: text }));
}

export { handle as GET, POST };
