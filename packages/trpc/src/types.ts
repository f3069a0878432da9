/** The shapes the middleware is configured with and hands to handlers. */
import type { TRPCError } from "@trpc/server";
import type { ReservedSql, Sql } from "postgres";
import type { IdempotencyError } from "./errors.js";
import type { IdempotencyEvent } from "./events.js";

/**
 * What the middleware needs in the app's context: the request's headers
 * (the Idempotency-Key), the scope keys live in (a tenant: the same key
 * from two tenants is two operations), and the request's list of what the
 * middleware decided (`outcomes`, empty when the context is made: outcome.ts).
 */
export type IdempotencyContext = { headers: Headers; tenant: { id: string }; outcomes: IdempotencyOutcome[] };

/** What the middleware decided for a call (outcome.ts). */
export type IdempotencyOutcome = {
  procedure: string;
  /** What the decision adds to the answer: `Idempotent-Replayed: true` on a replay, `Retry-After` on a 409. */
  headers: Readonly<Record<string, string>>;
  /** How long the call waited for the key (a holder, its lock, a concurrent INSERT), in milliseconds; 0 when it did not: a replay that waited is a duplicate that met a holder. */
  waitedMs: number;
} & (
  | {
      decision: "executed";
      /** How it took the key (README's decision table): a fresh `claim`, the `takeover` of a stale holder's, the `replace` of an expired one. */
      taken: KeyTake;
      /** The answer a retry will replay; undefined when the result was not final and the key was released for a retry to run again. */
      stored: StoredResponse | undefined;
    }
  | { decision: "replayed"; stored: StoredResponse }
  | { decision: "refused"; problem: IdempotencyError }
);

/** The decisions (`decide`, acquire.ts) that give a call the key. */
export type KeyTake = "claim" | "takeover" | "replace";

/**
 * Where key events go. `request`: the context of the tRPC call the event
 * belongs to, the very object the middleware was handed (the app's whole
 * context, so a plug-in finds there what it placed for the call); none for
 * the completer's and the expiry sweep's own events.
 */
export type IdempotencyEventSink = (event: IdempotencyEvent, request?: IdempotencyContext) => void;

/**
 * The app's code around a stretch of a call: it calls `run` once and returns
 * what `run` returns. `request` is the call's context, as the event sink gets it.
 */
export type Around = <T>(request: IdempotencyContext, run: () => Promise<T>) => Promise<T>;

/**
 * The bounds every key transaction runs under. A limit the pool's
 * connections carry from their start with the same value
 * (`connectionLimits(limits)` as postgres-js's `connection` option) is not
 * set again; every other is set with SET LOCAL right after BEGIN, in the
 * same round trip. Behind a transaction-mode pooler (PgBouncer) the
 * transaction sets them all: a session setting would stay on whichever
 * server connection the pooler handed out, and PgBouncer refuses them as
 * start-up parameters.
 */
export type TransactionLimits = {
  /** lock_timeout for the transaction's statements (the key's own lock waits `waitMs` instead). */
  lockTimeoutMs: number;
  /**
   * idle_in_transaction_session_timeout: a safety net. A transaction abandoned
   * with neither COMMIT nor ROLLBACK (a frozen process, a lost connection's
   * state) is ended by PostgreSQL after this long, and with it the key's lock,
   * instead of refusing every retry with 409. No key transaction waits on
   * anything but its own statements, so a live one is never idle that long.
   */
  idleInTransactionTimeoutMs: number;
};

/** A result as it goes over the wire: status and the exact body bytes (UTF-8 text). */
export type StoredResponse = { status: number; body: string };

export type ProcedureOptions = {
  /** How long a result is kept and replayed (the runtime's `defaults.ttlMs`: 24 hours unless `createRuntime` is given one). */
  ttlMs?: number;
  /** How long a holder owns an in-progress key without renewing it. */
  leaseMs?: number;
  /**
   * How long a recoverable holder keeps renewing its lease (10 × `leaseMs`
   * unless given). Past it the holder stops renewing and its `signal` aborts:
   * a handler stuck on a call that never settles (a dropped connection the
   * driver never reports) gives the key up within one more lease, and a
   * retry or the completer takes it over under a new fence, instead of a
   * live renewal refusing every retry with 409 for as long as it hangs. Its
   * own request is answered then (409, lease lost), whatever the handler
   * still waits for.
   */
  maxHoldMs?: number;
  /** How long a concurrent duplicate waits for the first attempt before `409`; 0 answers at once. */
  waitMs?: number;
};

export type IdempotencyRuntime<TTx> = {
  sql: () => Sql;
  /** A connection of its own for a key transaction: `sql().reserve()` unless the app hands its own (one that counts what it holds, say). */
  reserve: () => Promise<ReservedSql>;
  /** Wraps a connection that is inside a transaction in the handler's query API (Drizzle). */
  transaction: (connection: ReservedSql) => TTx;
  /** The response to store for an error that is a final outcome, or undefined to let a retry run again. */
  finalError: (error: TRPCError) => StoredResponse | undefined;
  /** The error a replay of a stored error answers with. */
  replayError: (stored: StoredResponse) => TRPCError;
  onEvent?: IdempotencyEventSink;
  /**
   * The id of the recorded trace the current request runs in (OpenTelemetry's
   * active span, when sampled), stored on the key row it takes (`trace_id`).
   */
  traceId?: () => string | undefined;
  defaults: Required<Omit<ProcedureOptions, "maxHoldMs">> & Pick<ProcedureOptions, "maxHoldMs">;
  /** What every key transaction sets for itself (SET LOCAL): see `TransactionLimits`. */
  limits: TransactionLimits;
  /**
   * The app's code around two stretches of every call, a tracer's spans, say: `call` around the middleware's
   * whole work (reading the key, the decision, the handler, the commit), `handler` around the handler's run under
   * the key. Here, not as tRPC middlewares of the app's placed around this one: each of those copies the call's
   * options twice over, a cost every write would pay.
   */
  around?: { call?: Around; handler?: Around };
  /** How often a recoverable holder renews its lease; 0 never (tests use it to play a stalled holder). */
  renewEveryMs?: (leaseMs: number) => number;
  /**
   * The app's say on a new key (a cap on the keys a tenant holds, say), asked
   * only when the call would insert a key row its scope does not hold: a key
   * with no row, or an expired one replaced. A replay, a mismatch, a wait, a
   * conflict or a takeover of a key already held never asks, so a retry gets
   * its stored answer whatever the app would say of a new key. It refuses by
   * throwing (the error goes to the caller as thrown; nothing is claimed, no
   * handler runs). `request` is the call's context, as `onEvent` gets it. It
   * is asked while the call holds a connection of the pool (on the locking
   * way, inside the key's transaction), so it should decide without waiting
   * for one: from what the app counted before the call, say.
   */
  admitNewKey?: (request: IdempotencyContext) => Promise<void> | void;
};

/** What `next()` gives a middleware back: the handler's output, or its error. */
export type HandlerResult = { ok: true; data: unknown } | { ok: false; error: TRPCError };

export type AtomicHandle<TTx> = {
  key: string;
  /** The open transaction; everything written through it commits with the stored result. */
  tx: TTx;
};

/** What a phase returns and the key stores: JSON as `JSON.stringify` writes it. */
export type Json = string | number | boolean | null | Json[] | { [k: string]: Json };

export type RecoverableHandle<TTx> = {
  key: string;
  /** Derived from tenant, key and the key's generation: pass it to every downstream call. */
  downstreamKey: string;
  /** The last phase committed by any attempt ("started" before the first). */
  recoveryPoint: string;
  /** Aborted when this attempt lost the key to a newer one. */
  signal: AbortSignal;
  /**
   * Runs `fn` in a transaction that commits together with the recovery point
   * `name`. A phase an earlier attempt already committed is not run again:
   * its stored value is returned.
   */
  phase<T extends Json>(name: string, fn: (tx: TTx) => Promise<T>): Promise<T>;
  /**
   * The last phase: `fn`'s writes commit together with the key's completion,
   * `fn`'s value stored as the answer, so a handler that calls out once costs
   * two commits, its claim and this. Return its value from the handler;
   * nothing runs after it. A final refusal is not a finish: commit its writes
   * in a `phase` and throw.
   */
  finish<T extends Json>(name: string, fn: (tx: TTx) => Promise<T>): Promise<T>;
};
