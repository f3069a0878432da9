/**
 * The REST surface is derived from the procedure registry: every procedure
 * with `meta.rest` is reachable at `/api<path>`, with `{param}` segments and
 * the query string (GET) or the JSON body (POST) as its input.
 */
import type { RegisteredProcedure } from "../registry";
import type { RestMeta } from "../meta";

export type Route = {
  procedure: string;
  rest: RestMeta;
  idempotent: boolean;
  pattern: RegExp;
  params: string[];
  input: RegisteredProcedure["input"];
  output: unknown;
};

export function buildRoutes(procedures: RegisteredProcedure[]): Route[] {
  const routes: Route[] = [];
  for (const { path: procedure, meta, input, output } of procedures) {
    if (!meta.rest) continue;
    const params: string[] = [];
    const source = meta.rest.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{(\w+)\}/g, (_, name: string) => {
      params.push(name);
      return "([^/]+)";
    });
    routes.push({ procedure, rest: meta.rest, idempotent: meta.idempotent === true, pattern: new RegExp(`^${source}$`), params, input, output });
  }
  return routes;
}

export type Match = { route: Route; params: Record<string, string> } | { methods: string[] } | undefined;

export function matchRoute(routes: Route[], method: string, path: string): Match {
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
