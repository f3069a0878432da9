/**
 * Request context. `createContextInner` is pure (tests call it directly with a
 * tenant); `createContext` adapts a fetch Request for the HTTP handlers.
 */
import type { FetchCreateContextFnOptions } from "@trpc/server/adapters/fetch";
import { database } from "../db/client";
import { logger } from "./logger";

export type Tenant = { id: string; name: string };

/**
 * What a procedure decided about the HTTP answer beyond its output: the
 * idempotency middleware puts the exact stored bytes here, and the REST
 * adapter sends them as they are.
 */
export type ResponseSink = { status?: number; body?: string; headers: Headers };

export type ContextOptions = {
  headers?: Headers;
  /** Set for server-side callers that already know the tenant (pages, tests). */
  tenant?: Tenant | null;
  response?: ResponseSink;
  /** The request body exactly as received, for signature checks (webhooks). */
  rawBody?: string;
};

export async function createContextInner(options: ContextOptions = {}) {
  const { db, sql } = database();
  return {
    db,
    sql,
    log: logger,
    headers: options.headers ?? new Headers(),
    tenant: options.tenant ?? null,
    response: options.response ?? { headers: new Headers() },
    rawBody: options.rawBody,
  };
}

export type Context = Awaited<ReturnType<typeof createContextInner>>;

export async function createContext({ req }: FetchCreateContextFnOptions): Promise<Context> {
  return createContextInner({ headers: req.headers });
}
