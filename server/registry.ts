/**
 * The one registry of procedures, read off the app router once: every
 * entrance that is not tRPC's own adapter finds procedures here — the REST
 * surface (routes), the OpenAPI document (their schemas), the completer (the
 * resumable ones) — and calls one by its dotted path here. Nothing else reads
 * the router's internals.
 */
import type { AnyProcedure, AnyRouter, inferRouterContext } from "@trpc/server";
import type { z } from "zod";
import type { Meta } from "./meta";

export type RegisteredProcedure = {
  /** The dotted path the caller, REST and the key rows use ("orders.create"). */
  path: string;
  meta: Meta;
  /** The input schema, when the procedure has exactly one. */
  input: z.ZodType | undefined;
  output: unknown;
};

export type ProcedureRegistry<TCtx> = {
  procedures: RegisteredProcedure[];
  /** Runs the procedure at `path` with `ctx`, as a server-side caller: every middleware applies. */
  call: (ctx: TCtx, path: string, input: unknown) => Promise<unknown>;
};

/** `createCaller`: the app's caller factory for `router` (server/trpc.ts's createCallerFactory). */
export function createRegistry<TRouter extends AnyRouter>(
  router: TRouter,
  createCaller: (ctx: inferRouterContext<TRouter>) => unknown,
): ProcedureRegistry<inferRouterContext<TRouter>> {
  // At run time `_def.procedures` is flat, keyed by the dotted path.
  const procedures = Object.entries(router._def.procedures as Record<string, AnyProcedure>).map(([path, procedure]): RegisteredProcedure => {
    const def = procedure._def as AnyProcedure["_def"] & { output?: unknown };
    return { path, meta: (def.meta ?? {}) as Meta, input: def.inputs.length === 1 ? (def.inputs[0] as z.ZodType) : undefined, output: def.output };
  });
  const known = new Set(procedures.map((p) => p.path));
  return {
    procedures,
    call: (ctx, path, input) => {
      if (!known.has(path)) return Promise.reject(new Error(`No procedure ${path}.`));
      // The caller is a tree of procedures by path segment.
      const procedure = path.split(".").reduce<unknown>((node, segment) => (node as Record<string, unknown>)[segment], createCaller(ctx)) as (input: unknown) => Promise<unknown>;
      return procedure(input);
    },
  };
}
