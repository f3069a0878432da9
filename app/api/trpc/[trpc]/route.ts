import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { checkAdminChange } from "@/server/admin/origin";
import { appRouter, createContextInner, trpcEdge } from "@/server/app";
import { DomainError, publicProblem } from "@/server/errors";
import { instrument } from "@/server/observability";
import { readJsonBody, refuseDeepJson } from "@/server/rest/body";
import { problemResponse } from "@/server/rest/respond";
import { responseMeta } from "./response-meta";

export const dynamic = "force-dynamic";

/** More calls than the app's own pages ever batch; a longer batch is one request doing the work of many. */
const MAX_BATCH = 10;

/** `rawBody`: a single call's body exactly as received, for the signature a webhook procedure checks. */
const handleWith = (rawBody?: string) => (req: Request) =>
  fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext: ({ req: request }) => createContextInner({ headers: request.headers, rawBody }),
    responseMeta,
    // Internal errors are logged, with their request id, by the error formatter (server/errors.ts publicProblem).
  });

const refuse = (error: unknown) => problemResponse(publicProblem(error, { route: "trpc" }));

/** The procedures a tRPC URL names (`/api/trpc/a.b,c.d` for a batch). */
const proceduresOf = (req: Request) => decodeURIComponent(new URL(req.url).pathname.slice("/api/trpc/".length)).split(",");

/** A 413 for a batch longer than MAX_BATCH, before any procedure runs. */
function tooLong(procedures: string[]): Response | undefined {
  const calls = procedures.length;
  if (calls <= MAX_BATCH) return undefined;
  return refuse(new DomainError("batch-too-long", 413, `A batch may hold at most ${MAX_BATCH} calls; this one has ${calls}.`));
}

async function GET(req: Request): Promise<Response> {
  try {
    const refused = tooLong(proceduresOf(req));
    if (refused) return refused;
    // A query's input is JSON in the URL, walked by tRPC and zod like a body.
    for (const input of new URL(req.url).searchParams.getAll("input")) refuseDeepJson(input);
    return await handleWith()(req);
  } catch (error) {
    return refuse(error);
  }
}

/**
 * Mutations go through the same body reader as REST (JSON only, 64 KiB,
 * UTF-8, no duplicate keys) before tRPC parses the text again: a form post
 * or an oversized body never reaches a procedure. An admin change from
 * another origin or as a form is a 403 here already (adminProcedure applies
 * the same rule to callers that do not come over HTTP).
 */
async function POST(req: Request): Promise<Response> {
  let procedures: string[];
  try {
    procedures = proceduresOf(req);
  } catch (error) {
    return refuse(error);
  }
  const refused = tooLong(procedures);
  if (refused) return refused;
  if (procedures.some((name) => name.startsWith("admin."))) {
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
  return trpcEdge(
    new Request(req.url, { method: "POST", headers: req.headers, body: text }),
    procedures,
    handleWith(procedures.length === 1 ? text : undefined),
  );
}

const observedGet = instrument.http("/api/trpc/[trpc]", GET);
const observedPost = instrument.http("/api/trpc/[trpc]", POST);

export { observedGet as GET, observedPost as POST };
