/**
 * What the middleware decided for a call, as a value its caller reads:
 * executed (with the answer it stored, if the result was final), replayed
 * (the stored answer), or refused (which problem). With it go the headers
 * the decision adds to the answer. REST sends the stored bytes, a tRPC
 * adapter's `responseMeta` sends the headers, the completer learns whether
 * it finished the key.
 *
 * A tRPC middleware hands its caller nothing but the procedure's output or
 * error, so the decision is kept here, under the request's `headers` (the
 * object the adopter's context already carries, unchanged by tRPC from the
 * adapter to the middleware), for as long as that request is alive. The
 * adopter allocates nothing for it.
 */
import { IdempotencyError } from "./errors.js";
import type { StoredResponse } from "./types.js";

export const REPLAYED_HEADER = "Idempotent-Replayed";

export type IdempotencyOutcome = {
  procedure: string;
  /** What the decision adds to the answer: `Idempotent-Replayed: true` on a replay, `Retry-After` on a 409. */
  headers: Readonly<Record<string, string>>;
} & (
  | {
      decision: "executed";
      /** The answer a retry will replay; undefined when the result was not final and the key was released for a retry to run again. */
      stored: StoredResponse | undefined;
    }
  | { decision: "replayed"; stored: StoredResponse }
  | { decision: "refused"; problem: IdempotencyError }
);

type Request = { headers: Headers };

const decided = new WeakMap<Headers, IdempotencyOutcome[]>();

export function noteOutcome(request: Request, outcome: IdempotencyOutcome): void {
  const list = decided.get(request.headers);
  if (list) list.push(outcome);
  else decided.set(request.headers, [outcome]);
}

/** The refusal an outcome reports: an IdempotencyError, thrown as such or as a TRPCError's cause. */
export function refusalOf(error: unknown): IdempotencyError | undefined {
  const cause = error instanceof Error && !(error instanceof IdempotencyError) ? error.cause : error;
  return cause instanceof IdempotencyError ? cause : undefined;
}

export const refused = (procedure: string, problem: IdempotencyError): IdempotencyOutcome => ({
  procedure,
  decision: "refused",
  problem,
  headers:
    "retryAfterSeconds" in problem && typeof problem.retryAfterSeconds === "number"
      ? { "Retry-After": String(problem.retryAfterSeconds) }
      : {},
});

/** What the middleware decided for the latest idempotent call made with these request headers, if any was made. */
export function idempotencyOutcome(request: Request): IdempotencyOutcome | undefined {
  return decided.get(request.headers)?.at(-1);
}

/**
 * The headers the middleware's decisions add to the answer of a request
 * (every call of a tRPC batch): what an adapter's `responseMeta` sends.
 */
export function idempotencyHeaders(request: Request | undefined): Record<string, string> {
  return Object.assign({}, ...(request ? (decided.get(request.headers) ?? []) : []).map((o) => o.headers)) as Record<string, string>;
}
