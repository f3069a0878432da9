/**
 * The tRPC endpoint's front door: what happens to a request before any
 * procedure runs, in this order, each refusal a problem+json answer:
 * 1. the batch cap: more than MAX_BATCH calls is a 413;
 * 2. a POST naming an admin procedure meets the admin-change rule before its
 *    body is read (a form from another port is a 403 as such), once: its
 *    context says so, and adminProcedure checks only server-side callers;
 * 3. one body read, REST's (JSON only, 64 KiB, UTF-8, no duplicate keys); a
 *    GET's `input` is held to the same depth;
 * 4. the lab's hook (`edge`), where a failure-lab run's own call joins its run;
 * 5. tRPC, its answers carrying responseMeta's headers.
 */
import { outcomeHeaders } from "@exactly-once/trpc";
import type { AnyRouter, TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { checkAdminChange, enforce } from "../admin/origin";
import type { Context, ContextOptions } from "../context";
import { DomainError, publicProblem, toProblem } from "../errors";
import { readJsonBody, refuseDeepJson } from "../rest/body";
import { problemResponse } from "../rest/respond";

type Handler = (req: Request) => Promise<Response>;

/** More calls than the app's own pages ever batch; a longer batch is one request doing the work of many. */
const MAX_BATCH = 10;

/**
 * The headers of what the middleware decided (Idempotent-Replayed; a 409's Retry-After, whole seconds until the
 * holder's lease runs out), as REST sends them, for the checkout's link. Every answer is one caller's: no-store.
 */
export function responseMeta({ ctx, errors }: { ctx?: Context; errors: TRPCError[] }) {
  const headers = new Headers({ ...outcomeHeaders(ctx), "cache-control": "no-store" });
  // The app's own refusals (a tenant over its budget, the database away) say when to come back in their problem.
  const retryAfter = errors.map((error) => toProblem(error).retryAfter).find((seconds) => typeof seconds === "number");
  if (retryAfter !== undefined && !headers.has("Retry-After")) headers.set("Retry-After", String(retryAfter));
  return { headers };
}

const refuse = (error: unknown) => problemResponse(publicProblem(error, { route: "trpc" }));

/** The procedures a URL names (`/api/trpc/a.b,c.d` for a batch); a batch past MAX_BATCH is a 413. */
function proceduresOf(req: Request): string[] {
  const procedures = decodeURIComponent(new URL(req.url).pathname.slice("/api/trpc/".length)).split(",");
  if (procedures.length <= MAX_BATCH) return procedures;
  throw new DomainError("batch-too-long", 413, `A batch may hold at most ${MAX_BATCH} calls; this one has ${procedures.length}.`);
}

/** What a POST brings past the door, in order: the batch cap, the admin-change rule (before the body), one body read. */
async function admitted(req: Request) {
  const procedures = proceduresOf(req);
  const adminChange = procedures.some((name) => name.startsWith("admin."));
  if (adminChange) enforce(checkAdminChange(req.headers));
  const { text } = await readJsonBody(req);
  // `rawBody`: a single call's body exactly as received, for the signature a webhook procedure checks.
  return { procedures, text, options: { rawBody: procedures.length === 1 ? text : undefined, adminChangeChecked: adminChange } };
}

export type TrpcEndpoint = { GET: Handler; POST: Handler };

export function createTrpcEndpoint(parts: {
  router: AnyRouter;
  createContext: (options: ContextOptions) => Promise<Context>;
  /** The lab's hook, when the lab is plugged in. */
  edge?: (req: Request, procedures: string[], handle: Handler) => Promise<Response>;
}): TrpcEndpoint {
  const handleWith =
    (options: Omit<ContextOptions, "headers"> = {}): Handler =>
    (req) =>
      fetchRequestHandler({
        endpoint: "/api/trpc",
        req,
        router: parts.router,
        createContext: ({ req: { headers } }) => parts.createContext({ ...options, headers }),
        responseMeta,
        // Internal errors are logged, with their request id, by the error formatter (server/errors.ts publicProblem).
      });

  async function GET(req: Request): Promise<Response> {
    try {
      proceduresOf(req);
      // A query's input is JSON in the URL, walked by tRPC and zod like a body.
      for (const input of new URL(req.url).searchParams.getAll("input")) refuseDeepJson(input);
      return await handleWith()(req);
    } catch (error) {
      return refuse(error);
    }
  }

  const POST = (req: Request): Promise<Response> =>
    admitted(req).then(({ procedures, text, options }) => {
      // tRPC 11's fetch adapter takes no parsed body (its JSON handler calls `req.json()` itself): it gets the checked text.
      const checked = new Request(req.url, { method: "POST", headers: req.headers, body: text });
      const handle = handleWith(options);
      return parts.edge ? parts.edge(checked, procedures, handle) : handle(checked);
    }, refuse);

  return { GET, POST };
}
