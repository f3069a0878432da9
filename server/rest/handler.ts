/**
 * The REST adapter: a fetch handler that calls the same tRPC procedures and
 * speaks plain JSON and application/problem+json.
 *
 * For idempotent procedures it answers with what the idempotency middleware
 * decided: the bytes it stored, so a replay is byte-identical to the first
 * answer, and the decision's headers (`Idempotent-Replayed: true`, a 409's
 * `Retry-After`).
 */
import type { ContextOptions } from "../context";
import { DomainError, fewErrors, malformedPathProblem, namedFields, publicProblem } from "../errors";
import { problemOf } from "../problems";
import { runIdempotent } from "@exactly-once/trpc";
import type { ProcedureRegistry } from "../registry";
import { readJsonBody } from "./body";
import { HEADER, problemResponse, send } from "./respond";
import { buildRoutes, matchRoute, type Route } from "./routes";

/** A query string as input fields; a parameter given twice is refused like a duplicate JSON key, not decided by order. */
function queryFields(params: URLSearchParams): Record<string, string> {
  const names = [...params.keys()];
  const repeated = [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
  if (repeated.length) {
    throw new DomainError("duplicate-key", 400, `The query string names ${namedFields(repeated)} more than once.`, {
      errors: fewErrors(repeated.map((field) => ({ field, message: "appears more than once" }))),
    });
  }
  return Object.fromEntries(params);
}

type Entrance<TCtx> = { registry: ProcedureRegistry<TCtx>; createContext: (options: ContextOptions) => Promise<TCtx> };

/**
 * A fetch handler for the registered procedures that have `meta.rest`.
 * `prefix` is the mount point ("/api"); the rest of the path selects the procedure.
 */
export function createRestHandler<TCtx>({ registry, createContext }: Entrance<TCtx>, prefix = "/api") {
  const routes = buildRoutes(registry.procedures);
  return (req: Request) => handle(req, prefix, routes, createContext);
}

async function handle<TCtx>(
  req: Request,
  prefix: string,
  routes: Route<TCtx>[],
  createContext: Entrance<TCtx>["createContext"],
): Promise<Response> {
  const url = new URL(req.url);
  const path = url.pathname.slice(prefix.length) || "/";
  let match: ReturnType<typeof matchRoute<TCtx>>;
  try {
    match = matchRoute(routes, req.method, path);
  } catch {
    // decodeURIComponent: a malformed escape or bytes that are not UTF-8 in a path segment.
    return problemResponse(malformedPathProblem());
  }
  if (!match) {
    return problemResponse(problemOf("not-found", `No endpoint at ${req.method} ${url.pathname}.`));
  }
  if ("methods" in match) {
    return problemResponse(
      problemOf("method-not-allowed", `${url.pathname} accepts ${match.methods.join(", ")}.`),
      new Headers({ [HEADER.allow]: match.methods.join(", ") }),
    );
  }
  const { route, params } = match;
  try {
    const body = route.rest.method === "GET" ? undefined : await readJsonBody(req);
    const rawBody = body?.text;
    const fields = body === undefined ? queryFields(url.searchParams) : body.value;
    if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
      throw new DomainError("validation", 400, "The request body must be a JSON object.", {
        errors: [{ field: "(body)", message: "must be a JSON object" }],
      });
    }
    const clashes = Object.keys(params).filter((name) => Object.hasOwn(fields, name));
    if (clashes.length) {
      throw new DomainError("validation", 400, `${clashes.join(", ")}: given by the path, not the body.`, {
        errors: clashes.map((field) => ({ field, message: "is given by the path, not the body" })),
      });
    }
    const input = { ...fields, ...params };
    const { result, outcome } = await runIdempotent(req.headers, async (call) =>
      route.call(await createContext({ ...call, rawBody }), input),
    );
    // The answer the middleware stored (run now or replayed; a decline, a refusal) goes out byte for byte, with its headers.
    if (outcome && outcome.decision !== "refused" && outcome.stored)
      return send(outcome.stored.status, outcome.stored.body, new Headers(outcome.headers));
    if (result.ok) return send(route.rest.status ?? 200, JSON.stringify(result.data), new Headers());
    return problemResponse(publicProblem(result.error, { procedure: route.procedure }), new Headers(outcome?.headers));
  } catch (error) {
    return problemResponse(publicProblem(error, { procedure: route.procedure }));
  }
}
