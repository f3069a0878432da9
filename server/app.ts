/**
 * The composition root. It builds the idempotency runtime, the provider
 * client with its plug-ins, the event log, the sign-in throttle, the router
 * and the one procedure registry once, and hands each part what it needs —
 * procedures get their services in the request context, the completer the
 * registry, the REST surface and the OpenAPI document the registry — so no
 * part imports its way up to here, and none reaches for the pool itself
 * (db/client.ts's `database()` is read here and by the entrances: start-up,
 * scripts, tests; .dependency-cruiser.cjs holds server/ to that). The
 * failure lab is plugged in through the core's ports, acting in demo mode
 * only. Every entrance (the route handlers, pages, the server's start-up,
 * tests) starts from here.
 */
import { completionPolicy, settleWithinMs as settleWithin, type CleanupOptions, type IdempotencyContext } from "@exactly-once/trpc";
import type { AnyRouter } from "@trpc/server";
import { database, openReplica } from "../db/client";
import { DEMO_TENANT } from "../db/seed";
import { accountsRouter } from "./accounts/_router";
import { adminRouter } from "./admin/_router";
import { OperatorRole } from "./admin/operators";
import { checkAdminChange } from "./admin/origin";
import { sessionFromHeaders } from "./admin/session";
import { signInRequest, signOutRequest } from "./admin/sign-in";
import { createSignInThrottle } from "./admin/throttle";
import { catalogRouter } from "./catalog/_router";
import { checkoutRouter } from "./checkout/_router";
import { contextOf, type AppServices, type Context, type ContextOptions } from "./context";
import { env, isDemoMode } from "./env";
import { createCompleter } from "./keys/completer";
import { createEventLog, type EventLog } from "./keys/events";
import { createKeysRuntime, deleteExpiredKeys } from "./keys/runtime";
import { startExpirySweep } from "./keys/sweep";
import { createLabPlugin } from "./lab/plugin";
import { instrument } from "./observability";
import { ledgerRouter } from "./ledger/_router";
import { createLedger } from "./ledger/post";
import { logger } from "./logger";
import { couponsRouter, ordersRouter } from "./orders/_router";
import { createProvider } from "./payments/provider";
import { paymentsRouter } from "./payments/_router";
import { createRegistry } from "./registry";
import { createRestHandler } from "./rest/handler";
import { openApiDocument as documentOf } from "./rest/openapi";
import { createTenantLimits } from "./tenants/limits";
import { tenantById, tenantForToken } from "./tenants/service";
import { createCallerFactory, router } from "./trpc";
import { webhooksRouter } from "./webhooks/_router";

const lab = createLabPlugin(isDemoMode, () => database().sql, env.PORT);
const ledger = createLedger(lab.onMovement);
const provider = createProvider(
  () => database().db,
  [
    { observe: lab.onProviderCall, ...lab.provider },
    // After the lab: the metrics and the provider call's span see what the app sees, simulated faults included.
    { transport: instrument.providerFetch },
  ],
);

/**
 * Idempotency events, written to idempotency_events off the request path (start-up flushes it at shutdown).
 * One per process, kept on `globalThis` as the pool is (db/client.ts): Next.js evaluates this module in the
 * start-up's bundle and again in the routes', and the clean stop, which flushes start-up's, must also write
 * what the routes' requests left buffered (up to 5 s of replay counts), not drop it.
 */
const eventLogHolder = globalThis as { __eoEventLog?: EventLog };
export const eventLog = (eventLogHolder.__eoEventLog ??= createEventLog(() => database().sql));

const limits = createTenantLimits(database, {
  requestsPerMinute: env.TENANT_REQUESTS_PER_MINUTE,
  maxLiveKeys: env.TENANT_MAX_LIVE_KEYS,
  storefrontRequestsPerMinute: env.STOREFRONT_REQUESTS_PER_MINUTE,
});

/**
 * The app's idempotency runtime: its events go to the event log, and to the lab's diagram; a request from
 * outside claims a new key only within its tenant's key cap (the middleware asks for no key the tenant holds).
 */
export const idempotencyRuntime = instrument.runtime({
  ...createKeysRuntime(database, { ttlMs: env.IDEMPOTENCY_TTL_MS, leaseMs: env.IDEMPOTENCY_LEASE_MS }, (event) => {
    eventLog.record(event, instrument.traceId());
    lab.onKeyEvent(event);
  }),
  // Without a cap there is nothing to ask, and a recoverable claim keeps its one round trip.
  ...(env.TENANT_MAX_LIVE_KEYS > 0 && {
    admitNewKey: (request: IdempotencyContext) =>
      (request as Partial<Context>).fromOutside ? limits.admitNewKey(request.tenant.id) : undefined,
  }),
});

export const appRouter = router({
  catalog: catalogRouter,
  payments: paymentsRouter,
  accounts: accountsRouter,
  coupons: couponsRouter,
  orders: ordersRouter,
  ledger: ledgerRouter,
  webhooks: webhooksRouter,
  checkout: checkoutRouter,
  admin: adminRouter,
  lab: lab.router,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
const registry = createRegistry(appRouter);
instrument.knownProcedures(registry.procedures.filter((p) => p.meta.idempotent).map((p) => p.path));

export const completer = createCompleter({
  registry,
  createContext: createContextInner,
  sql: () => database().sql,
  intervalMs: env.COMPLETER_INTERVAL_MS,
  onEvent: (event) => eventLog.record(event, instrument.traceId()),
  around: lab.aroundCompleterAttempt,
});

const auth: AppServices["auth"] = {
  tenantForToken: (token) => tenantForToken(database().db, token),
  // Demo mode sells as the demo tenant; otherwise only as the one a deployment names (STOREFRONT_TENANT_ID).
  storefrontTenant: async () =>
    isDemoMode() ? DEMO_TENANT : env.STOREFRONT_TENANT_ID ? tenantById(database().db, env.STOREFRONT_TENANT_ID) : undefined,
  adminSession: (headers) => sessionFromHeaders(database().db, headers),
  adminChange: checkAdminChange,
  readOnlyReason: ({ operator }) =>
    operator.role === OperatorRole.Operator ? undefined : `Operator ${operator.name} may only read (role ${operator.role}).`,
};

/** A request's context. Pure apart from the open pool: tests call it directly with a tenant. */
export async function createContextInner(options: ContextOptions = {}): Promise<Context> {
  const pool = database();
  // The admin's overview reads DATABASE_REPLICA_URL's standby when there is one.
  const reads = env.DATABASE_REPLICA_URL ? openReplica(env.DATABASE_REPLICA_URL) : pool.sql;
  const services = {
    db: pool.db,
    sql: pool.sql,
    pool,
    psp: provider(),
    events: eventLog,
    ledger,
    reads,
    log: logger,
    keys: lab.keysRuntime(idempotencyRuntime),
    auth,
    completer,
    limits,
    webhookSecret: env.PSP_WEBHOOK_SECRET,
  };
  return contextOf(services, options);
}

/** A REST surface over `router`'s procedures (the app's below; tests mount routers of their own). */
export const restHandlerFor = (someRouter: AnyRouter) =>
  createRestHandler({ registry: createRegistry(someRouter), createContext: createContextInner });

/** REST at /api: the app's procedures, with the lab's webhook edge. */
export const handleRest = lab.restEdge(createRestHandler({ registry, createContext: createContextInner }));

export const openApiDocument = () => documentOf(registry.procedures);

/** The tRPC endpoint's edge: a failure-lab run's own call joins its run there. */
export const trpcEdge = lab.trpcEdge;

/** Reconciliation's grace: by then a resumable operation is settled with these settings, unless it needs attention. */
export const settleWithinMs = () =>
  settleWithin(completionPolicy(env.COMPLETER_INTERVAL_MS), env.IDEMPOTENCY_LEASE_MS, env.COMPLETER_INTERVAL_MS);

/** The provider client as the app calls it, for entrances outside a request (`npm run reconcile`). */
export const paymentProvider = provider;

/** Admin sign-in's throttle, across instances (its counters live in the database). */
const signInThrottle = createSignInThrottle(() => database().db);

/** `/admin/session`: sign-in and sign-out. */
export const adminSessionRoutes = {
  signIn: (req: Request) => signInRequest(req, { db: database().db, throttle: signInThrottle }),
  signOut: (req: Request) => signOutRequest(req, database().db),
};

/** The expiry sweep of this instance (start-up starts it). */
export const startExpirySweepOf = (everyMs: number) =>
  startExpirySweep({ everyMs, retentionMs: env.IDEMPOTENCY_TTL_MS }, { sql: () => database().sql, events: eventLog });

/** Expired keys deleted now (`npm run keys:cleanup`, benches, tests; the admin's purge goes through its context). */
export const deleteExpired = (options?: CleanupOptions) => deleteExpiredKeys({ sql: database().sql, events: eventLog }, options);
