/**
 * The REST surface is derived from the tRPC router: every procedure with
 * `meta.rest` is reachable at `/api<path>`, with `{param}` segments and the
 * query string (GET) or the JSON body (POST) as its input.
 */
import type { AnyProcedure, AnyRouter } from "@trpc/server";
import type { Meta, RestMeta } from "../trpc";

export type Route = {
  procedure: string;
  rest: RestMeta;
  idempotent: boolean;
  pattern: RegExp;
  params: string[];
  def: AnyProcedure["_def"];
};

export function buildRoutes(appRouter: AnyRouter): Route[] {
  const routes: Route[] = [];
  const procedures = appRouter._def.procedures as Record<string, AnyProcedure>;
  for (const [procedure, proc] of Object.entries(procedures)) {
    const meta = proc._def.meta as Meta | undefined;
    if (!meta?.rest) continue;
    const params: string[] = [];
    const source = meta.rest.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{(\w+)\}/g, (_, name: string) => {
      params.push(name);
      return "([^/]+)";
    });
    routes.push({ procedure, rest: meta.rest, idempotent: meta.idempotent === true, pattern: new RegExp(`^${source}$`), params, def: proc._def });
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
