/**
 * The REST surface is derived from the procedure registry: every procedure
 * with `meta.rest` is reachable at `/api<path>`, with `{param}` segments and
 * the query string (GET) or the JSON body (POST) as its input.
 */
import type { RegisteredProcedure } from "../registry";
import type { RestMeta } from "../meta";

export type Route<TCtx = never> = {
  procedure: string;
  call: RegisteredProcedure<TCtx>["call"];
  rest: RestMeta;
  idempotent: boolean;
  pattern: RegExp;
  params: string[];
  input: RegisteredProcedure<TCtx>["input"];
  output: unknown;
};

export function buildRoutes<TCtx>(procedures: RegisteredProcedure<TCtx>[]): Route<TCtx>[] {
  const routes: Route<TCtx>[] = [];
  for (const { path: procedure, meta, input, output, call } of procedures) {
    if (!meta.rest) continue;
    const params: string[] = [];
    const source = meta.rest.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{(\w+)\}/g, (_, name: string) => {
      params.push(name);
      return "([^/]+)";
    });
    routes.push({
      procedure,
      call,
      rest: meta.rest,
      idempotent: meta.idempotent === true,
      pattern: new RegExp(`^${source}$`),
      params,
      input,
      output,
    });
  }
  return routes;
}

export type Match<TCtx> = { route: Route<TCtx>; params: Record<string, string> } | { methods: string[] } | undefined;

export function matchRoute<TCtx>(routes: Route<TCtx>[], method: string, path: string): Match<TCtx> {
  const methods: string[] = [];
  for (const route of routes) {
    const m = route.pattern.exec(path);
    if (!m) continue;
    if (route.rest.method !== method) {
      methods.push(route.rest.method);
      continue;
    }
    const params = Object.fromEntries(route.params.map((name, i) => [name, decodeURIComponent(m[i + 1]!)]));
    return { route, params };
  }
  return methods.length ? { methods } : undefined;
}
