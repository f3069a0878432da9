/**
 * The REST adapter: a fetch handler that calls the same tRPC procedures and
 * speaks plain JSON and application/problem+json.
 *
 * For idempotent procedures it sends the bytes the idempotency middleware
 * stored, so a replay is byte-identical to the first answer (plus
 * `Idempotent-Replayed: true`).
 */
import type { ContextOptions } from "../context";
import { DomainError, fewErrors, namedFields, publicProblem } from "../errors";
import { problemOf } from "../problems";
import type { ResponseSink } from "@exactly-once/trpc";
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
  return (req: Request) => handle(req, prefix, routes, (options, path, input) => createContext(options).then((ctx) => registry.call(ctx, path, input)));
}

async function handle(
  req: Request,
  prefix: string,
  routes: Route[],
  call: (options: ContextOptions, path: string, input: unknown) => Promise<unknown>,
): Promise<Response> {
  const url = new URL(req.url);
  const path = url.pathname.slice(prefix.length) || "/";
  let match: ReturnType<typeof matchRoute>;
  try {
    match = matchRoute(routes, req.method, path);
  } catch {
    // decodeURIComponent: a malformed escape or bytes that are not UTF-8 in a path segment.
    return problemResponse(problemOf("validation", "The path is not valid percent-encoded UTF-8.", { errors: [{ field: "(path)", message: "must be valid percent-encoded UTF-8" }] }));
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
  const sink: ResponseSink = { headers: new Headers() };
  try {
    const body = route.rest.method === "GET" ? undefined : await readJsonBody(req);
    const rawBody = body?.text;
    const fields = body === undefined ? queryFields(url.searchParams) : body.value;
    if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
      throw new DomainError("validation", 400, "The request body must be a JSON object.", { errors: [{ field: "(body)", message: "must be a JSON object" }] });
    }
    const clashes = Object.keys(params).filter((name) => Object.hasOwn(fields, name));
    if (clashes.length) {
      throw new DomainError("validation", 400, `${clashes.join(", ")}: given by the path, not the body.`, {
        errors: clashes.map((field) => ({ field, message: "is given by the path, not the body" })),
      });
    }
    const input = { ...fields, ...params };
    const output = await call({ headers: req.headers, response: sink, rawBody }, route.procedure, input);
    if (sink.body !== undefined) return send(sink.status ?? 200, sink.body, sink.headers);
    return send(route.rest.status ?? 200, JSON.stringify(output), sink.headers);
  } catch (error) {
    // A stored outcome (a decline, a refusal) goes out exactly as stored.
    if (sink.body !== undefined && sink.status !== undefined) return send(sink.status, sink.body, sink.headers);
    return problemResponse(publicProblem(error, { procedure: route.procedure }), sink.headers);
  }
}
