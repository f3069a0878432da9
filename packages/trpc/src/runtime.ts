/**
 * `createRuntime`: an `IdempotencyRuntime` from the pool alone, with defaults
 * an app overrides one by one. Without a `transaction` wrapper, handlers get
 * the key transaction's postgres-js connection itself (`ctx.idempotency.tx`
 * is a tagged template); with Drizzle, pass one that wraps it.
 *
 * The default result policy: a 4xx the handler throws after the claim is a
 * business refusal (a decline, a rule) and final, so it is stored and
 * replayed; 408, 409, 425 and 429 ask the client to come back, and a 5xx
 * leaves the effect unknown, so neither is stored and a retry runs again.
 */
import { TRPCError, type TRPC_ERROR_CODE_KEY } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import type { ReservedSql, Sql } from "postgres";
import type { IdempotencyEventSink, IdempotencyRuntime, ProcedureOptions, StoredResponse, TransactionLimits } from "./types.js";

export type RuntimeOptions<TTx> = {
  /** The pool (postgres-js); each key transaction reserves one of its connections. */
  sql: Sql;
  /** Reserves a connection for a key transaction; `sql.reserve()` by default. */
  reserve?: () => Promise<ReservedSql>;
  /** Wraps the key transaction's connection in the handlers' query API (say, Drizzle); by default the connection itself. */
  transaction?: (connection: ReservedSql) => TTx;
  finalError?: IdempotencyRuntime<TTx>["finalError"];
  replayError?: IdempotencyRuntime<TTx>["replayError"];
  onEvent?: IdempotencyEventSink;
  /** The recorded trace of the current request, kept on the key row it takes; none by default. */
  traceId?: () => string | undefined;
  /** Code of the app's around each call's work and its handler's run (spans, say); none by default. */
  around?: IdempotencyRuntime<TTx>["around"];
  /** Asked before a call inserts a key row its scope does not hold, never for a key it holds (a replay); may refuse by throwing. */
  admitNewKey?: IdempotencyRuntime<TTx>["admitNewKey"];
  /** Per-procedure options override these (`atomic({ leaseMs })`). */
  defaults?: ProcedureOptions;
  limits?: Partial<TransactionLimits>;
};

const DEFAULTS: IdempotencyRuntime<unknown>["defaults"] = { ttlMs: 24 * 60 * 60_000, leaseMs: 30_000, waitMs: 10_000 };
const LIMITS: TransactionLimits = { lockTimeoutMs: 10_000, idleInTransactionTimeoutMs: 30_000 };

const COME_BACK = new Set([408, 409, 425, 429]);

function finalError(error: TRPCError): StoredResponse | undefined {
  const status = getHTTPStatusCodeFromError(error);
  if (status < 400 || status >= 500 || COME_BACK.has(status)) return undefined;
  return { status, body: JSON.stringify({ code: error.code, message: error.message }) };
}

function replayError(stored: StoredResponse): TRPCError {
  const { code, message } = JSON.parse(stored.body) as { code: TRPC_ERROR_CODE_KEY; message: string };
  return new TRPCError({ code, message });
}

export function createRuntime<TTx = ReservedSql>(options: RuntimeOptions<TTx>): IdempotencyRuntime<TTx> {
  return {
    sql: () => options.sql,
    reserve: options.reserve ?? (() => options.sql.reserve()),
    transaction: options.transaction ?? ((connection) => connection as unknown as TTx),
    finalError: options.finalError ?? finalError,
    replayError: options.replayError ?? replayError,
    onEvent: options.onEvent,
    traceId: options.traceId,
    around: options.around,
    admitNewKey: options.admitNewKey,
    defaults: { ...DEFAULTS, ...options.defaults },
    limits: { ...LIMITS, ...options.limits },
  };
}
