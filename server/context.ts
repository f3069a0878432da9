/**
 * The request context: what a procedure may use. The composition root
 * (server/app.ts) builds the services once and `contextOf` adds a request's
 * own parts; the procedure builders (server/trpc.ts) and handlers take
 * everything they need from here, so none imports its way up to the root.
 */
import type { Sql } from "postgres";
import type { Database, Db } from "../db/client";
import type { PspClient } from "./psp/client";
import type { OriginVerdict } from "./admin/origin";
import type { AdminSession } from "./admin/session";
import type { IdempotencyOutcome, IdempotencyRuntime } from "@exactly-once/trpc";
import type { Completer } from "./keys/completer";
import type { EventLog } from "./keys/events";
import type { Ledger } from "./ledger/post";
import type { Logger } from "./logger";
import type { TenantLimits } from "./tenants/limits";

export type Tenant = { id: string; name: string };

export type AppServices = {
  db: Db;
  sql: Sql;
  /** Transactions and held connections, counted and under the app's limits (db/client.ts). */
  pool: Database;
  /** Where idempotency events go (the admin's purge reports its deletions there). */
  events: EventLog;
  /** Posts movements to the ledger (in the caller's transaction), telling the root's observer. */
  ledger: Ledger;
  /** The payment provider's client, with the plug-ins the root gave it. */
  psp: PspClient;
  /** For reads that may lag the primary by a moment (the admin's lists and counts): a standby when one is configured. */
  reads: Sql;
  log: Logger;
  /** The idempotency middleware's runtime for this request (the lab hands a simulated crash a variant). */
  keys: IdempotencyRuntime<Db>;
  auth: {
    tenantForToken: (token: string) => Promise<Tenant | undefined>;
    /** The tenant the storefront acts as; undefined while the storefront is off. */
    storefrontTenant: () => Promise<Tenant | undefined>;
    adminSession: (headers: Headers) => Promise<AdminSession | undefined>;
    adminChange: (headers: Headers) => OriginVerdict;
    /** Why this operator may only read, or undefined when they may change keys. */
    readOnlyReason: (admin: AdminSession) => string | undefined;
  };
  /** Finishes keys whose client went away ("Resume now", the lab's rounds). */
  completer: Completer;
  /** Each tenant's request budget and key cap, taken by requests from outside (a token, the storefront). */
  limits: TenantLimits;
  /** The provider's webhook signing secret (PSP_WEBHOOK_SECRET). */
  webhookSecret: string;
};

export type ContextOptions = {
  headers?: Headers;
  /** Set for server-side callers that already know the tenant (pages, tests, the completer). */
  tenant?: Tenant | null;
  /** The request body exactly as received, for signature checks (webhooks). */
  rawBody?: string;
  /** Where the idempotency middleware puts what it decided: a call's own (`runIdempotent`), else a new list. */
  outcomes?: IdempotencyOutcome[];
  /** Set by the tRPC endpoint when this request passed the admin-change rule before its body was read. */
  adminChangeChecked?: boolean;
};

export type Context = AppServices & {
  headers: Headers;
  tenant: Tenant | null;
  rawBody: string | undefined;
  /** What the idempotency middleware decided for the request's calls (the tRPC endpoint's responseMeta sends their headers). */
  outcomes: IdempotencyOutcome[];
  /**
   * A consequential request from outside (a tenant's token, the storefront) that its budget admitted
   * (server/trpc.ts): the new keys it would claim count against its tenant's key cap. The server's own
   * callers (pages, the completer, tests) have none.
   */
  fromOutside?: true;
  adminChangeChecked: boolean;
};

export const contextOf = (services: AppServices, options: ContextOptions = {}): Context => ({
  ...services,
  headers: options.headers ?? new Headers(),
  tenant: options.tenant ?? null,
  rawBody: options.rawBody,
  outcomes: options.outcomes ?? [],
  adminChangeChecked: options.adminChangeChecked ?? false,
});
