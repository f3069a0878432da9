/**
 * The composition root. It builds the idempotency runtime, the provider
 * client with its plug-ins, the event log, the sign-in throttle, the router
 * and the one procedure registry once, and hands each part what it needs —
 * procedures get their services in the request context, the completer the
 * registry, the REST surface and the OpenAPI document the registry — so no
 * part imports its way up to here, and none reaches for the pool itself
 * (db/client.ts's `database()` is read here and by the entrances: start-up,
 * scripts, tests; .dependency-cruiser.cjs holds server/ to that). The
 * failure lab is plugged in through the core's ports in demo mode only.
 * Every entrance (the route handlers, pages, the server's start-up, tests)
 * starts from here.
 *
 * `createApp` builds all of it from its settings, which it hands to the
 * parts as parameters: nothing below the root reads the environment. The
 * process's own app is built from the parsed environment (server/env.ts);
 * a test that needs other settings builds an app of its own.
 */
import { completionPolicy, settleWithinMs as settleWithin, type CleanupOptions, type IdempotencyContext } from "@exactly-once/trpc";
import type { AnyRouter } from "@trpc/server";
import { database, openReplica, type Database } from "../db/client";
import { DEMO_TENANT } from "../db/seed";
import { accountsRouter } from "./accounts/_router";
import { adminRouter } from "./admin/_router";
import { OperatorRole, operatorNameOptional } from "./admin/operators";
import { checkAdminChange } from "./admin/origin";
import { adminEnabled, sessionFromHeaders } from "./admin/session";
import { signInRequest, signOutRequest } from "./admin/sign-in";
import { createSignInThrottle } from "./admin/throttle";
import { catalogRouter } from "./catalog/_router";
import { checkoutRouter } from "./checkout/_router";
import { contextOf, type AppServices, type Context, type ContextOptions } from "./context";
import { createTrpcEndpoint, type TrpcEndpoint } from "./edge/trpc-endpoint";
import { env, type Env } from "./env";
import { createCompleter } from "./keys/completer";
import { createEventLog, type EventLog } from "./keys/events";
import { createKeysRuntime, deleteExpiredKeys } from "./keys/runtime";
import { startExpirySweep } from "./keys/sweep";
import { createLabPlugin } from "./lab/plugin";
import { createLabRouter } from "./lab/router";
import { instrument } from "./observability";
import { metricsAllowed } from "./observability/access";
import { refreshKeyStates } from "./observability/key-states";
import { metrics } from "./observability/metrics";
import { ledgerRouter } from "./ledger/_router";
import { createLedger } from "./ledger/post";
import { logger } from "./logger";
import { couponsRouter, ordersRouter } from "./orders/_router";
import { createProvider, pspUrl } from "./payments/provider";
import { paymentsRouter } from "./payments/_router";
import { problemOf } from "./problems";
import { createRegistry } from "./registry";
import { createRestHandler } from "./rest/handler";
import { problemResponse } from "./rest/respond";
import { openApiDocument as documentOf } from "./rest/openapi";
import { createTenantLimits } from "./tenants/limits";
import { tenantById, tenantForToken } from "./tenants/service";
import { createCallerFactory, router } from "./trpc";
import { webhooksRouter } from "./webhooks/_router";

export type AppOptions = {
  settings: Env;
  /** The pool once open: the process's app is built at import, before start-up opens it. */
  pool: () => Database;
  /** Where idempotency events go; by default a writer of the app's own. */
  eventLog?: EventLog;
};

export function createApp({ settings, pool, eventLog = createEventLog(() => pool().sql) }: AppOptions) {
  // The failure lab's hooks, in demo mode only: elsewhere no request passes through the lab's code.
  const lab = settings.DEMO_MODE ? createLabPlugin(() => pool().sql) : undefined;
  const ledger = createLedger(lab?.onMovement);
  const provider = createProvider(() => pool().db, settings, [
    ...(lab ? [lab.provider] : []),
    // After the lab: the metrics and the provider call's span see what the app sees, simulated faults included.
    { transport: instrument.providerFetch },
  ]);

  const limits = createTenantLimits(pool, {
    requestsPerMinute: settings.TENANT_REQUESTS_PER_MINUTE,
    maxLiveKeys: settings.TENANT_MAX_LIVE_KEYS,
    storefrontRequestsPerMinute: settings.STOREFRONT_REQUESTS_PER_MINUTE,
  });

  /**
   * The app's idempotency runtime: its events go to the event log, and to the lab's diagram; a request from
   * outside claims a new key only within its tenant's key cap (the middleware asks for no key the tenant holds).
   */
  const idempotencyRuntime = instrument.runtime({
    ...createKeysRuntime(pool, { ttlMs: settings.IDEMPOTENCY_TTL_MS, leaseMs: settings.IDEMPOTENCY_LEASE_MS }, (event) => {
      eventLog.record(event, instrument.traceId());
      lab?.onKeyEvent(event);
    }),
    // Without a cap there is nothing to ask, and a recoverable claim keeps its one round trip.
    ...(settings.TENANT_MAX_LIVE_KEYS > 0 && {
      admitNewKey: (request: IdempotencyContext) =>
        (request as Partial<Context>).fromOutside ? limits.admitNewKey(request.tenant.id) : undefined,
    }),
  });

  const appRouter = router({
    catalog: catalogRouter,
    payments: paymentsRouter,
    accounts: accountsRouter,
    coupons: couponsRouter,
    orders: ordersRouter,
    ledger: ledgerRouter,
    webhooks: webhooksRouter,
    checkout: checkoutRouter,
    admin: adminRouter,
    lab: createLabRouter({
      enabled: settings.DEMO_MODE,
      port: settings.PORT,
      pspUrl: () => pspUrl(settings),
      runsPerMinute: settings.LAB_RUNS_PER_MINUTE,
    }),
  });
  const registry = createRegistry(appRouter);

  const completer = createCompleter({
    registry,
    createContext: createContextInner,
    sql: () => pool().sql,
    intervalMs: settings.COMPLETER_INTERVAL_MS,
    onEvent: (event) => eventLog.record(event, instrument.traceId()),
    around: lab?.aroundCompleterAttempt,
  });

  const auth: AppServices["auth"] = {
    tenantForToken: (token) => tenantForToken(pool().db, token),
    // Demo mode sells as the demo tenant; otherwise only as the one a deployment names (STOREFRONT_TENANT_ID).
    storefrontTenant: async () =>
      settings.DEMO_MODE ? DEMO_TENANT : settings.STOREFRONT_TENANT_ID ? tenantById(pool().db, settings.STOREFRONT_TENANT_ID) : undefined,
    adminSession: (headers) => sessionFromHeaders(pool().db, settings, headers),
    adminChange: checkAdminChange,
    readOnlyReason: ({ operator }) =>
      operator.role === OperatorRole.Operator ? undefined : `Operator ${operator.name} may only read (role ${operator.role}).`,
  };

  /** A request's context. Pure apart from the open pool: tests call it directly with a tenant. */
  async function createContextInner(options: ContextOptions = {}): Promise<Context> {
    const db = pool();
    // The admin's overview reads DATABASE_REPLICA_URL's standby when there is one.
    const reads = settings.DATABASE_REPLICA_URL ? openReplica(settings.DATABASE_REPLICA_URL) : db.sql;
    const services = {
      db: db.db,
      sql: db.sql,
      pool: db,
      psp: provider(),
      events: eventLog,
      ledger,
      reads,
      log: logger,
      keys: lab?.keysRuntime(idempotencyRuntime) ?? idempotencyRuntime,
      auth,
      completer,
      limits,
      webhookSecret: settings.PSP_WEBHOOK_SECRET,
    };
    return contextOf(services, options);
  }

  const restHandler = createRestHandler({ registry, createContext: createContextInner });
  const handleRest = lab ? lab.restEdge(restHandler) : restHandler;
  /** Admin sign-in's throttle, across instances (its counters live in the database). */
  const signInThrottle = createSignInThrottle(() => pool().db);

  return {
    settings,
    appRouter,
    createCaller: createCallerFactory(appRouter),
    createContextInner,
    /** The admin session a request's cookie carries, as adminProcedure reads it (the admin pages read it here). */
    adminSession: auth.adminSession,
    idempotencyRuntime,
    eventLog,
    completer,
    idempotentProcedures: registry.procedures.filter((p) => p.meta.idempotent).map((p) => p.path),
    /** A REST surface over `router`'s procedures (the app's below; tests mount routers of their own). */
    restHandlerFor: (someRouter: AnyRouter) =>
      createRestHandler({ registry: createRegistry(someRouter), createContext: createContextInner }),
    /** REST at /api: the app's procedures, with the lab's webhook edge. */
    handleRest,
    /** The same, observed as an HTTP request (its span, its metrics): what /api/[...rest] answers. */
    rest: instrument.http("/api/[...rest]", handleRest),
    /** Prometheus text format, for a scraper on loopback or one with METRICS_TOKEN; anyone else finds nothing here. */
    metrics: async (req: Request): Promise<Response> => {
      if (!metricsAllowed(req.headers, settings.METRICS_TOKEN))
        return problemResponse(problemOf("not-found", "No endpoint at GET /api/metrics."));
      await refreshKeyStates(pool());
      const { registry: scraped } = metrics();
      return new Response(await scraped.metrics(), { headers: { "content-type": scraped.contentType, "cache-control": "no-store" } });
    },
    openApiDocument: () => documentOf(registry.procedures),
    /** The tRPC endpoint behind its front door, with the lab's edge (a failure-lab run's own call joins its run there), observed. */
    trpc: observedEndpoint(createTrpcEndpoint({ router: appRouter, createContext: createContextInner, edge: lab?.trpcEdge })),
    /** Reconciliation's grace: by then a resumable operation is settled with these settings, unless it needs attention. */
    settleWithinMs: () =>
      settleWithin(completionPolicy(settings.COMPLETER_INTERVAL_MS), settings.IDEMPOTENCY_LEASE_MS, settings.COMPLETER_INTERVAL_MS),
    /** The provider client as the app calls it, for entrances outside a request (`npm run reconcile`). */
    paymentProvider: provider,
    /** Where the provider answers (the stand-in start-up started, unless PSP_URL names another). */
    pspUrl: () => pspUrl(settings),
    /** `/admin/session`: sign-in and sign-out. */
    adminSessionRoutes: {
      signIn: (req: Request) => signInRequest(req, { db: pool().db, settings, throttle: signInThrottle }),
      signOut: (req: Request) => signOutRequest(req, pool().db, settings),
    },
    /** The sign-in form's switches: whether sign-in is possible, and whether the operator's name may be left out. */
    signInForm: async () => ({
      enabled: adminEnabled(settings),
      demo: settings.DEMO_MODE,
      nameOptional: await operatorNameOptional(pool().db, settings),
    }),
    /** The expiry sweep of this instance (start-up starts it). */
    startExpirySweep: (everyMs: number) =>
      startExpirySweep({ everyMs, retentionMs: settings.IDEMPOTENCY_TTL_MS }, { sql: () => pool().sql, events: eventLog }),
    /** Expired keys deleted now (`npm run keys:cleanup`, benches, tests; the admin's purge goes through its context). */
    deleteExpired: (options?: CleanupOptions) => deleteExpiredKeys({ sql: pool().sql, events: eventLog }, options),
  };
}

const observedEndpoint = ({ GET, POST }: TrpcEndpoint): TrpcEndpoint => ({
  GET: instrument.http("/api/trpc/[trpc]", GET),
  POST: instrument.http("/api/trpc/[trpc]", POST),
});

export type App = ReturnType<typeof createApp>;
export type AppRouter = App["appRouter"];

/**
 * The process's app. Its event log is one per process, kept on `globalThis` as the pool is (db/client.ts):
 * Next.js evaluates this module in the start-up's bundle and again in the routes', and the clean stop, which
 * flushes start-up's, must also write what the routes' requests left buffered (up to 5 s of replay counts).
 */
const eventLogHolder = globalThis as { __eoEventLog?: EventLog };
export const app = createApp({
  settings: env,
  pool: database,
  eventLog: (eventLogHolder.__eoEventLog ??= createEventLog(() => database().sql)),
});
logger.level = env.LOG_LEVEL;
// Once, for the process's app: zeroing a series erases what it has counted, so an app a test builds does not repeat it.
instrument.knownProcedures(app.idempotentProcedures);
