/**
 * The single `initTRPC`. Routers import the procedures exported here, never
 * raw middlewares:
 * - `publicProcedure`: no tenant;
 * - `tenantProcedure`: `Authorization: Bearer <token>` resolved to a tenant;
 * - `idempotentProcedure(input)`: tenant + idempotency, claim and business
 *   writes in one transaction (handlers write through `ctx.idempotency.tx`);
 * - `recoverableProcedure(input)`: tenant + idempotency with recovery points,
 *   for handlers that call a provider between their writes;
 * - `adminProcedure`: a signed admin session cookie; tenant tokens never count;
 * - `operatorProcedure`: an admin session whose operator has the `operator` role.
 *
 * The idempotent builders take the input schema because validation must run
 * before the key is claimed (a malformed request pins nothing), and tRPC runs
 * middlewares in the order they are added.
 */
import { initTRPC } from "@trpc/server";
import type { z } from "zod";
import { isDatabaseUnavailable } from "../db/availability";
import { DEMO_TENANT } from "../db/seed";
import type { Context } from "./context";
import { DomainError, publicProblem, toTRPCError } from "./errors";
import { createIdempotencyProcedures, type ProcedureOptions } from "./idempotency";
import { idempotencyRuntime } from "./keys/runtime";
import { instrument } from "./observability";
import { env, isDemoMode } from "./env";
import { tenantById, tenantForToken } from "./tenants/service";
import { bearerToken } from "./tenants/tokens";
import { checkAdminChange } from "./admin/origin";
import { OperatorRole } from "./admin/operators";
import { sessionFromHeaders } from "./admin/session";

export type RestMeta = {
  method: "GET" | "POST";
  /** Under /api, with `{param}` segments taken from the input. */
  path: `/${string}`;
  status?: number;
  summary: string;
  tags: string[];
};
export type Meta = {
  rest?: RestMeta;
  /** Set by the idempotent builders; the OpenAPI document then asks for Idempotency-Key. */
  idempotent?: boolean;
  /**
   * A recoverable procedure the completer may run again from its stored
   * request alone (tenant, key, canonical input) when its client went away.
   */
  resumable?: boolean;
};

/** A recoverable procedure's options; `resumable` lets the completer finish it (server/keys/completer.ts). */
export type RecoverableOptions = ProcedureOptions & { resumable?: boolean };

const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    // The body shows the public problem only: no stack, no message of an internal error (it may quote SQL).
    errorFormatter({ shape, error, path }) {
      const problem = publicProblem(error, { path });
      const { stack: _stack, ...data } = shape.data;
      return { ...shape, message: problem.detail, data: { ...data, problem } };
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/**
 * Domain errors thrown anywhere below, and a database that is away (503, safe
 * to retry), surface with their own code instead of INTERNAL_SERVER_ERROR.
 */
export const publicProcedure = t.procedure.use(instrument.procedure).use(async ({ next }) => {
  const result = await next();
  if (!result.ok && (result.error.cause instanceof DomainError || isDatabaseUnavailable(result.error.cause))) {
    return { ...result, error: toTRPCError(result.error.cause) };
  }
  return result;
});

export const tenantProcedure = publicProcedure.use(async ({ ctx, next }) => {
  if (ctx.tenant) return next({ ctx: { tenant: ctx.tenant } });
  const token = bearerToken(ctx.headers);
  const tenant = token ? await tenantForToken(ctx.db, token) : undefined;
  if (!tenant) {
    throw toTRPCError(new DomainError("unauthorized", 401, "A valid API token is required: Authorization: Bearer <token>."));
  }
  return next({ ctx: { tenant } });
});

export type TenantContext = Context & { tenant: NonNullable<Context["tenant"]> };

/**
 * The admin session comes from the cookie alone, so a Bearer tenant token can
 * never reach admin procedures. A mutation must also come from the app's own
 * origin as JSON: a form on another port (same site, so it carries the
 * cookie) is refused before anything runs.
 */
export const adminProcedure = publicProcedure.use(async ({ ctx, type, next }) => {
  if (type === "mutation") {
    const verdict = checkAdminChange(ctx.headers);
    if (!verdict.ok) throw toTRPCError(new DomainError("forbidden-origin", 403, verdict.reason));
  }
  const admin = await sessionFromHeaders(ctx.headers);
  if (!admin) throw toTRPCError(new DomainError("unauthorized", 401, "Admin sign-in required."));
  return next({ ctx: { admin } });
});

/** An admin change to keys (resume, recover, purge): the `operator` role only; a viewer gets 403. */
export const operatorProcedure = adminProcedure.use(({ ctx, next }) => {
  if (ctx.admin.operator.role !== OperatorRole.Operator) {
    throw toTRPCError(new DomainError("forbidden-role", 403, `Operator ${ctx.admin.operator.name} may only read (role ${ctx.admin.operator.role}).`));
  }
  return next();
});

const idempotency = instrument.procedures(createIdempotencyProcedures(instrument.runtime(idempotencyRuntime)));

/**
 * The shop's own pages act as one tenant, server-side: the browser never
 * holds a tenant token. In demo mode that is the demo tenant; otherwise only
 * the tenant a deployment names on purpose (STOREFRONT_TENANT_ID), and with
 * none named the storefront is off (404): a real deployment never takes
 * anonymous orders as the demo tenant. Only the storefront procedures use this.
 */
export const storefrontProcedure = publicProcedure.use(async ({ ctx, next }) => {
  const tenant = isDemoMode() ? DEMO_TENANT : env.STOREFRONT_TENANT_ID ? await tenantById(ctx.db, env.STOREFRONT_TENANT_ID) : undefined;
  if (!tenant) throw toTRPCError(new DomainError("storefront-off", 404, "The storefront is off on this server."));
  return next({ ctx: { tenant: tenant as TenantContext["tenant"] } });
});

/** A checkout from the storefront: the demo tenant plus idempotency with recovery points. */
export function storefrontRecoverableProcedure<S extends z.ZodType>(input: S, { resumable = false, ...options }: RecoverableOptions = {}) {
  return storefrontProcedure.meta({ idempotent: true, resumable }).input(input).concat(idempotency.recoverable(options));
}

export function idempotentProcedure<S extends z.ZodType>(input: S, options?: ProcedureOptions) {
  return tenantProcedure.meta({ idempotent: true }).input(input).concat(idempotency.atomic(options));
}

export function recoverableProcedure<S extends z.ZodType>(input: S, { resumable = false, ...options }: RecoverableOptions = {}) {
  return tenantProcedure.meta({ idempotent: true, resumable }).input(input).concat(idempotency.recoverable(options));
}
