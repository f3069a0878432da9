/**
 * The tRPC binding: the two flavours as reusable, typed procedure builders,
 * on tRPC 11's `.concat()` ("define a partial procedure that can be used with
 * any tRPC instance that matches the context and metadata of the plugin").
 * The package keeps an `initTRPC` of its own because tRPC requires one for
 * that: a partial procedure is built from an instance, and this one declares
 * only what the middleware needs from the app's context and meta. It
 * creates no router; the app's own instance concatenates it:
 *
 *   tenantProcedure.input(schema).concat(idempotency.atomic())
 *
 * Input validation runs before the claim because `.input()` comes first: a
 * malformed request pins nothing.
 */
import { initTRPC, TRPCError } from "@trpc/server";
// The one internal import: a middleware that answers without calling next()
// (a replay) must hand tRPC a result carrying this marker; tRPC exports no
// public way to build one.
import { middlewareMarker } from "@trpc/server/unstable-core-do-not-import";
import type { Acquired, Attempt } from "./acquire.js";
import { runAtomic, type Executed } from "./atomic.js";
import { fingerprint } from "./canonical.js";
import { IdempotencyError } from "./errors.js";
import { isFirstSend, readIdempotencyKey } from "./key.js";
import { refusalOf, refused, REPLAYED_HEADER } from "./outcome.js";
import { runRecoverable } from "./recoverable.js";
import { KeyState } from "./states.js";
import { carriedLimits, setLocalLimits } from "./transaction.js";
import type { Decidable } from "./store.js";
import type { IdempotencyContext, IdempotencyOutcome, IdempotencyRuntime, ProcedureOptions } from "./types.js";

/** A recoverable holder renews its lease for at most this many leases unless told otherwise (ProcedureOptions.maxHoldMs). */
const MAX_HOLD_LEASES = 10;

/** The status a stored success is replayed with: the REST route's (trpc-to-openapi style meta), else 200. */
export type IdempotencyMeta = { rest?: { status?: number } };

/**
 * `runtime`: one for every call, or read from each call's context, so an
 * app's composition root can hand a request its runtime (or a variant of
 * it) along with everything else the request needs.
 */
export function createIdempotencyProcedures<TTx, TCtx extends IdempotencyContext = IdempotencyContext>(
  runtime: IdempotencyRuntime<TTx> | ((ctx: TCtx) => IdempotencyRuntime<TTx>),
) {
  const runtimeOf = typeof runtime === "function" ? runtime : () => runtime;
  const t = initTRPC.context<TCtx>().meta<IdempotencyMeta>().create();

  /**
   * What a key transaction's BEGIN carries for the runtime's limits on its pool: worked out again only when either
   * is another (a variant runtime, a new pool), not on every call (it parses the pool's settings).
   */
  let setupFor: { limits: IdempotencyRuntime<TTx>["limits"]; sql: ReturnType<IdempotencyRuntime<TTx>["sql"]>; setup: string } | undefined;
  function setupOf(runtime: IdempotencyRuntime<TTx>): string {
    const sql = runtime.sql();
    if (setupFor?.limits !== runtime.limits || setupFor.sql !== sql) {
      setupFor = { limits: runtime.limits, sql, setup: setLocalLimits(runtime.limits, carriedLimits(sql)) };
    }
    return setupFor.setup;
  }

  function attempt(
    runtime: IdempotencyRuntime<TTx>,
    ctx: IdempotencyContext,
    path: string,
    input: unknown,
    options: ProcedureOptions,
  ): Attempt {
    let key: string;
    try {
      key = readIdempotencyKey(ctx.headers);
    } catch (error) {
      if (error instanceof IdempotencyError) throw new TRPCError({ code: error.code, message: error.message, cause: error });
      throw error;
    }
    const o = { ...runtime.defaults, ...options };
    const fp = fingerprint(path, input);
    const tenantId = ctx.tenant.id;
    return {
      tenantId,
      key,
      procedure: path,
      fingerprint: fp.hash,
      request: fp.request,
      ttlMs: o.ttlMs,
      traceId: runtime.traceId?.() ?? null,
      leaseMs: o.leaseMs,
      maxHoldMs: o.maxHoldMs ?? MAX_HOLD_LEASES * o.leaseMs,
      waitMs: o.waitMs,
      firstSend: isFirstSend(ctx.headers),
      limits: runtime.limits,
      setup: setupOf(runtime),
      event: (type, extra) => runtime.onEvent?.({ type, tenantId, key, procedure: path, ...extra }, ctx),
      ...(runtime.admitNewKey && { admitNewKey: () => runtime.admitNewKey!(ctx) }),
    };
  }

  function replay(runtime: IdempotencyRuntime<TTx>, ctx: TCtx, a: Attempt, row: Decidable) {
    const stored = { status: row.responseStatus!, body: row.responseBody! };
    a.event("replayed", { status: stored.status, fence: row.fence });
    const outcome: IdempotencyOutcome = {
      procedure: a.procedure,
      decision: "replayed",
      stored,
      headers: { [REPLAYED_HEADER]: "true" },
      waitedMs: a.waitedMs ?? 0,
    };
    if (row.state === KeyState.Completed)
      return { outcome, result: { ok: true as const, data: JSON.parse(stored.body) as unknown, marker: middlewareMarker, ctx } };
    return { outcome, result: { ok: false as const, error: runtime.replayError(stored), marker: middlewareMarker } };
  }

  type Run<R> = (r: IdempotencyRuntime<TTx>, a: Attempt) => Promise<Acquired<Executed<R>>>;

  /** One call's whole work, inside the runtime's `around.call` when it has one. */
  function runCall<R>(ctx: TCtx, path: string, input: unknown, options: ProcedureOptions, run: Run<R>) {
    const r = runtimeOf(ctx);
    const call = r.around?.call;
    return call ? call(ctx, () => answerCall(r, ctx, path, input, options, run)) : answerCall(r, ctx, path, input, options, run);
  }

  /** The handler's run under the key, inside the runtime's `around.handler` when it has one. */
  function handled<T>(r: IdempotencyRuntime<TTx>, ctx: TCtx, run: () => Promise<T>): Promise<T> {
    const handler = r.around?.handler;
    return handler ? handler(ctx, run) : run();
  }

  /**
   * Runs one attempt and adds what was decided to the request's outcomes
   * (outcome.ts); a refusal (a missing key, a mismatch, a key in progress or
   * lost) is added and thrown on to tRPC.
   */
  async function answerCall<R>(
    r: IdempotencyRuntime<TTx>,
    ctx: TCtx,
    path: string,
    input: unknown,
    options: ProcedureOptions,
    run: Run<R>,
  ) {
    let a: Attempt | undefined;
    try {
      a = attempt(r, ctx, path, input, options);
      const acquired = await run(r, a);
      if (acquired.kind === "replay") {
        const { outcome, result } = replay(r, ctx, a, acquired.row);
        ctx.outcomes.push(outcome);
        return result;
      }
      const { taken, stored } = acquired.value;
      ctx.outcomes.push({ procedure: path, decision: "executed", taken, stored, headers: {}, waitedMs: a.waitedMs ?? 0 });
      return acquired.value.result;
    } catch (error) {
      const problem = refusalOf(error);
      if (problem) ctx.outcomes.push(refused(path, problem, a?.waitedMs ?? 0));
      throw error;
    }
  }

  return {
    /** Handler writes go through `ctx.idempotency.tx` and commit with the stored result. */
    atomic: (options: ProcedureOptions = {}) =>
      t.procedure.use(({ ctx, meta, path, input, next }) =>
        // tRPC hands the middleware its context as a simplified copy of TCtx's type.
        runCall(ctx as TCtx, path, input, options, (r, a) =>
          runAtomic(r, a, meta?.rest?.status ?? 200, (idempotency) => handled(r, ctx as TCtx, () => next({ ctx: { idempotency } }))),
        ),
      ),
    /** Handlers call out between `ctx.idempotency.phase(...)`s, with `ctx.idempotency.downstreamKey`. */
    recoverable: (options: ProcedureOptions = {}) =>
      t.procedure.use(({ ctx, meta, path, input, next }) =>
        runCall(ctx as TCtx, path, input, options, (r, a) =>
          runRecoverable(r, a, meta?.rest?.status ?? 200, (idempotency) => handled(r, ctx as TCtx, () => next({ ctx: { idempotency } }))),
        ),
      ),
  };
}
