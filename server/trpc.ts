/**
 * The app's one `initTRPC` (the middleware package builds its partial
 * procedures with a tRPC instance of its own, joined here by `.concat()`:
 * see packages/trpc/src/procedures.ts for why it needs one). Routers import
 * the procedures exported here, never raw middlewares:
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
 *
 * This module only assembles builders: what they check with (tenants, admin
 * sessions, the storefront's tenant, the idempotency runtime) comes in the
 * context the composition root (server/app.ts) builds.
 */
import { initTRPC } from "@trpc/server";
import type { z } from "zod";
import { isDatabaseUnavailable } from "../db/availability";
import type { Context, Tenant } from "./context";
import type { Meta } from "./meta";
import { DomainError, publicProblem, toTRPCError } from "./errors";
import { createIdempotencyProcedures, type ProcedureOptions } from "@exactly-once/trpc";
import { instrument } from "./observability";
import { enforce } from "./admin/origin";
import { clientAddress } from "./edge/client-address";
import { bearerToken } from "./tenants/tokens";

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

/**
 * A consequential request from outside takes from a budget before anything
 * is claimed: with a tenant's token, from the tenant's; an anonymous
 * storefront checkout, from its client address's, never the tenant's (one
 * visitor must not lock the shop's integration out). The new keys it would
 * claim then count against the tenant's key cap, asked by the middleware
 * only for a key the tenant does not hold (`admitNewKey`, server/app.ts), so
 * a retry still gets its stored answer at the cap. The server's own callers
 * (pages, the completer, tests) come with their tenant set and are not counted.
 */
async function admitted(ctx: Context, meta: Meta | undefined, tenant: Tenant, via: "token" | "storefront") {
  if (!meta?.idempotent) return { tenant };
  const admission = via === "token" ? ctx.limits.admit(tenant.id) : ctx.limits.admitStorefront(tenant.id, clientAddress(ctx.headers));
  await admission.catch((error: unknown) => Promise.reject(toTRPCError(error)));
  return { tenant, fromOutside: true as const };
}

export const tenantProcedure = publicProcedure.use(async ({ ctx, meta, next }) => {
  if (ctx.tenant) return next({ ctx: { tenant: ctx.tenant } });
  const token = bearerToken(ctx.headers);
  const tenant = token ? await ctx.auth.tenantForToken(token) : undefined;
  if (!tenant) {
    throw toTRPCError(new DomainError("unauthorized", 401, "A valid API token is required: Authorization: Bearer <token>."));
  }
  return next({ ctx: await admitted(ctx, meta, tenant, "token") });
});

export type TenantContext = Context & { tenant: NonNullable<Context["tenant"]> };

/**
 * The admin session comes from the cookie alone, so a Bearer tenant token can
 * never reach admin procedures. A mutation must also come from the app's own
 * origin as JSON: a form on another port (same site, so it carries the
 * cookie) is refused before anything runs (over HTTP, by the endpoint).
 */
export const adminProcedure = publicProcedure.use(async ({ ctx, type, next }) => {
  if (type === "mutation" && !ctx.adminChangeChecked) enforce(ctx.auth.adminChange(ctx.headers));
  const admin = await ctx.auth.adminSession(ctx.headers);
  if (!admin) throw toTRPCError(new DomainError("unauthorized", 401, "Admin sign-in required."));
  return next({ ctx: { admin } });
});

/** An admin change to keys (resume, recover, purge): the `operator` role only; a viewer gets 403. */
export const operatorProcedure = adminProcedure.use(({ ctx, next }) => {
  const readOnly = ctx.auth.readOnlyReason(ctx.admin);
  if (readOnly) throw toTRPCError(new DomainError("forbidden-role", 403, readOnly));
  return next();
});

/**
 * Each call's runtime comes with its context: the root's, or the variant it
 * handed this request (the root's runtime brings the acquisition's and the
 * handler's spans as its `around` hooks: server/observability).
 */
const idempotency = createIdempotencyProcedures((ctx: TenantContext) => ctx.keys);

/**
 * The shop's own pages act as one tenant, server-side: the browser never
 * holds a tenant token. Which one the root decides (the demo tenant in demo
 * mode, else only one a deployment names on purpose); with none the
 * storefront is off (404). A server-side caller came with its tenant
 * resolved (a page's storefrontCaller, the completer's rerun as the key's own
 * tenant) and keeps it: a request has one tenant, decided once. Only the
 * storefront procedures use this.
 */
export const storefrontProcedure = publicProcedure.use(async ({ ctx, meta, next }) => {
  if (ctx.tenant) return next({ ctx: { tenant: ctx.tenant } });
  const tenant = await ctx.auth.storefrontTenant();
  if (!tenant) throw toTRPCError(new DomainError("storefront-off", 404, "The storefront is off on this server."));
  return next({ ctx: await admitted(ctx, meta, tenant, "storefront") });
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
