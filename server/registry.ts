/**
 * The one registry of procedures, read off the app router once: every
 * entrance that is not tRPC's own adapter finds procedures here — the REST
 * surface (routes), the OpenAPI document (their schemas), the completer (the
 * resumable ones) — and calls the one it holds. Nothing else reads the
 * router's internals.
 */
import type { AnyProcedure, AnyRouter, inferRouterContext } from "@trpc/server";
import type { z } from "zod";
import type { Meta } from "./meta";

export type RegisteredProcedure<TCtx = never> = {
  /** The dotted path the caller, REST and the key rows use ("orders.create"). */
  path: string;
  meta: Meta;
  /** The input schema, when the procedure has exactly one. */
  input: z.ZodType | undefined;
  output: unknown;
  /** Runs the procedure with `ctx`, as a server-side caller does: every middleware applies. */
  call: (ctx: TCtx, input: unknown) => Promise<unknown>;
};

export type ProcedureRegistry<TCtx> = {
  procedures: RegisteredProcedure<TCtx>[];
  byPath: (path: string) => RegisteredProcedure<TCtx> | undefined;
};

export function createRegistry<TRouter extends AnyRouter>(router: TRouter): ProcedureRegistry<inferRouterContext<TRouter>> {
  // At run time `_def.procedures` is flat, keyed by the dotted path.
  const procedures = Object.entries(router._def.procedures as Record<string, AnyProcedure>).map(
    ([path, procedure]): RegisteredProcedure<inferRouterContext<TRouter>> => {
      const def = procedure._def as AnyProcedure["_def"] & { output?: unknown };
      return {
        path,
        meta: (def.meta ?? {}) as Meta,
        input: def.inputs.length === 1 ? (def.inputs[0] as z.ZodType) : undefined,
        output: def.output,
        // What tRPC's createCaller does for one procedure (a procedure is callable with these options), without
        // building a caller per request and walking to the procedure by its path.
        call: (ctx, input) => procedure({ ctx, path, type: def.type, getRawInput: async () => input, signal: undefined, batchIndex: 0 }),
      };
    },
  );
  const byPath = new Map(procedures.map((p) => [p.path, p]));
  return { procedures, byPath: (path) => byPath.get(path) };
}
