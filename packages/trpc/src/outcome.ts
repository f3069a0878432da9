/**
 * What the middleware decided for a call, as a value its caller reads:
 * executed (with the answer it stored, if the result was final), replayed
 * (the stored answer), or refused (which problem). With it go the headers
 * the decision adds to the answer. REST sends the stored bytes, a tRPC
 * adapter's `responseMeta` sends the headers, the completer learns whether
 * it finished the key.
 *
 * A tRPC middleware hands its caller nothing but the procedure's output or
 * error, so the middleware adds each decision to the request's own list,
 * `ctx.outcomes` (part of `IdempotencyContext`, so the type checker sees
 * that every context carries one): tRPC passes the context's fields on to
 * every middleware as they are, and the list goes with them. `runIdempotent`
 * hands a call a fresh list and returns what was decided with the result;
 * `outcomeHeaders(ctx)` reads a tRPC request's list for `responseMeta`.
 */
import { IdempotencyError } from "./errors.js";
import type { IdempotencyContext, IdempotencyOutcome } from "./types.js";

export const REPLAYED_HEADER = "Idempotent-Replayed";

/** The refusal an outcome reports: an IdempotencyError, thrown as such or as a TRPCError's cause. */
export function refusalOf(error: unknown): IdempotencyError | undefined {
  const cause = error instanceof Error && !(error instanceof IdempotencyError) ? error.cause : error;
  return cause instanceof IdempotencyError ? cause : undefined;
}

export const refused = (procedure: string, problem: IdempotencyError, waitedMs: number): IdempotencyOutcome => ({
  procedure,
  decision: "refused",
  problem,
  waitedMs,
  headers:
    "retryAfterSeconds" in problem && typeof problem.retryAfterSeconds === "number"
      ? { "Retry-After": String(problem.retryAfterSeconds) }
      : {},
});

/**
 * The headers the middleware's decisions add to the answer of a request
 * (every call of a tRPC batch): what an adapter's `responseMeta` sends.
 * `ctx` is undefined when the adapter could not build the context.
 */
export function outcomeHeaders(ctx: Pick<IdempotencyContext, "outcomes"> | undefined): Record<string, string> {
  return Object.assign({}, ...(ctx?.outcomes ?? []).map((o) => o.headers)) as Record<string, string>;
}

/** What a call of a procedure gives back: its output, or what it threw. */
export type CallResult<T> = { ok: true; data: T } | { ok: false; error: unknown };

/** What `run` puts into the context it calls the procedure with: the call's headers and the list its outcome goes to. */
export type IdempotentCall = Pick<IdempotencyContext, "headers" | "outcomes">;

/**
 * Runs one call of a procedure (`run`, through a server-side caller or any
 * other way into the procedure, with `call` in its context) and returns its
 * result together with what the middleware decided for it: undefined when
 * the call never reached the middleware (its input refused, no tenant) or
 * the procedure is not idempotent.
 */
export async function runIdempotent<T>(
  headers: Headers,
  run: (call: IdempotentCall) => Promise<T>,
): Promise<{ result: CallResult<T>; outcome: IdempotencyOutcome | undefined }> {
  const call: IdempotentCall = { headers, outcomes: [] };
  let result: CallResult<T>;
  try {
    result = { ok: true, data: await run(call) };
  } catch (error) {
    result = { ok: false, error };
  }
  return { result, outcome: call.outcomes.at(-1) };
}
