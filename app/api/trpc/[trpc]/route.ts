import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { createContext } from "@/server/context";
import { checkAdminChange } from "@/server/admin/origin";
import { DomainError, publicProblem } from "@/server/errors";
import { throughLab } from "@/server/lab/edge";
import { readJsonBody } from "@/server/rest/body";
import { problemResponse } from "@/server/rest/respond";
import { appRouter } from "@/server/root";
import { responseMeta } from "./response-meta";

export const dynamic = "force-dynamic";

const handle = (req: Request) =>
  fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext,
    responseMeta,
    // Internal errors are logged, with their request id, by the error formatter (server/errors.ts publicProblem).
  });

const refuse = (error: unknown) => problemResponse(publicProblem(error, { route: "trpc" }));

/** The procedures a tRPC URL names (`/api/trpc/a.b,c.d` for a batch). */
const proceduresOf = (req: Request) => decodeURIComponent(new URL(req.url).pathname.slice("/api/trpc/".length)).split(",");

/**
 * Mutations go through the same body reader as REST (JSON only, 64 KiB,
 * UTF-8, no duplicate keys) before tRPC parses the text again: a form post
 * or an oversized body never reaches a procedure. An admin change from
 * another origin or as a form is a 403 here already (adminProcedure applies
 * the same rule to callers that do not come over HTTP).
 */
async function POST(req: Request): Promise<Response> {
  if (proceduresOf(req).some((name) => name.startsWith("admin."))) {
    const verdict = checkAdminChange(req.headers);
    if (!verdict.ok) return refuse(new DomainError("forbidden-origin", 403, verdict.reason));
  }
  let text: string;
  try {
    text = (await readJsonBody(req)).text;
  } catch (error) {
    return refuse(error);
  }
  // A request of a failure-lab run (demo mode only) is recorded and may meet its run's simulations.
  return throughLab(new Request(req.url, { method: "POST", headers: req.headers, body: text }), handle);
}

export { handle as GET, POST };
