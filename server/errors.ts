/**
 * Domain errors and the one mapping of every error to a tRPC code and to an
 * RFC 9457 problem (application/problem+json).
 *
 * A `DomainError` is a decided business outcome (a decline, insufficient
 * funds, a redeemed coupon): the idempotency middleware stores and replays
 * it. Anything else that is not a client error is not final: the key is
 * released so a retry can finish the work.
 */
import { randomUUID } from "node:crypto";
import { TRPCError, type TRPC_ERROR_CODE_KEY } from "@trpc/server";
import { z } from "zod";
import { isDatabaseUnavailable, RETRY_AFTER_SECONDS } from "../db/availability";
import { logger } from "./logger";
import { IdempotencyError, IdempotencyKeyInProgressError, IdempotencyLeaseLostError } from "@exactly-once/trpc";
import {
  isProblemSlug,
  PROBLEM_TYPE_BASE,
  problemOf,
  PROBLEMS,
  TITLES,
  type Problem,
  type ProblemSlug,
  type ProblemSlugOf,
} from "./problems";

export type { Problem, ProblemSlug } from "./problems";

const CODE_BY_STATUS: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  402: "PAYMENT_REQUIRED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  422: "UNPROCESSABLE_CONTENT",
  429: "TOO_MANY_REQUESTS",
  502: "BAD_GATEWAY",
  503: "SERVICE_UNAVAILABLE",
};

export const trpcCodeFor = (status: number): TRPC_ERROR_CODE_KEY => CODE_BY_STATUS[status] ?? "INTERNAL_SERVER_ERROR";

/** A business outcome, final for its idempotency key. Its type and status are a pair of the registry (server/problems.ts). */
export class DomainError<S extends ProblemSlug = ProblemSlug> extends Error {
  override readonly name: string = "DomainError";
  constructor(
    readonly slug: S,
    readonly status: (typeof PROBLEMS)[S]["status"],
    message: string,
    readonly extensions: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class NotFoundError extends DomainError<"not-found"> {
  override readonly name = "NotFoundError";
  constructor(what: string, id: string) {
    super("not-found", 404, `No ${what} with id ${id}.`, { id });
  }
}

/** A 400 that names the field, for checks a schema cannot express. */
export class InvalidFieldError extends DomainError<"validation"> {
  override readonly name = "InvalidFieldError";
  constructor(field: string, message: string) {
    super("validation", 400, `${field}: ${message}`, { errors: [{ field, message }] });
  }
}

/** A payment the provider declined: a decided outcome, stored and replayed. */
export class PaymentDeclinedError extends DomainError<"payment-declined"> {
  override readonly name = "PaymentDeclinedError";
  constructor(reason: string, message: string, links: { paymentId: string; orderId?: string }) {
    super("payment-declined", 402, message, { reason, ...links });
  }
}

/**
 * Another system did not answer, so the outcome is unknown. Not final: the
 * key is released and a retry with it finishes the work (with the same
 * downstream key, so the provider never acts twice).
 */
export class UpstreamUnavailableError extends Error {
  override readonly name = "UpstreamUnavailableError";
  readonly status = 503;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A problem rebuilt from stored bytes, so a replayed error maps exactly like the first. */
export class StoredProblemError extends Error {
  override readonly name = "StoredProblemError";
  constructor(readonly problem: Problem) {
    super(problem.detail);
  }
}

const fieldName = (path: PropertyKey[]) => path.map(String).join(".") || "(body)";

/**
 * How many fields a 400 names at most: enough to fix a request, and a body
 * of thousands of unknown fields cannot make the answer larger than itself.
 */
export const MAX_NAMED_FIELDS = 5;

/** The first few errors and, past them, one line saying how many more there are. */
export function fewErrors<E extends { field: string; message: string }>(errors: E[]): { field: string; message: string }[] {
  if (errors.length <= MAX_NAMED_FIELDS) return errors;
  const more = errors.length - MAX_NAMED_FIELDS;
  return [...errors.slice(0, MAX_NAMED_FIELDS), { field: "(more)", message: `and ${more} more field${more === 1 ? "" : "s"}` }];
}

/** A list of fields for a detail line, as few as `fewErrors` keeps. */
export const namedFields = (fields: string[]) =>
  fields.length <= MAX_NAMED_FIELDS
    ? fields.join(", ")
    : `${fields.slice(0, MAX_NAMED_FIELDS).join(", ")} and ${fields.length - MAX_NAMED_FIELDS} more`;

function validationProblem(error: z.ZodError): Problem {
  // An unknown field is named itself, not the object that holds it.
  const errors = error.issues.flatMap((i) =>
    i.code === "unrecognized_keys"
      ? i.keys.map((key) => ({ field: fieldName([...i.path, key]), message: "is not a known field" }))
      : [{ field: fieldName(i.path), message: i.message }],
  );
  const named = fewErrors(errors);
  return problemOf("validation", named.map((e) => `${e.field}: ${e.message}`).join("; "), { errors: named });
}

function fromCause(cause: unknown): Problem | undefined {
  if (cause instanceof StoredProblemError) return cause.problem;
  if (cause instanceof z.ZodError) return validationProblem(cause);
  if (cause instanceof DomainError) return problemOf(cause.slug, cause.message, cause.extensions);
  if (cause instanceof UpstreamUnavailableError) return problemOf("upstream-unavailable", cause.message, { retryAfter: 1 });
  // The middleware names its types itself; the registry lists each of them (tests/contract/document.test.ts).
  if (cause instanceof IdempotencyError && isProblemSlug(cause.problem)) {
    const retry = cause instanceof IdempotencyKeyInProgressError || cause instanceof IdempotencyLeaseLostError;
    return problemOf(cause.problem, cause.message, retry ? { retryAfter: cause.retryAfterSeconds } : {});
  }
  return undefined;
}

/** The problem for any error; unknown errors say nothing about their internals. */
export function toProblem(error: unknown): Problem {
  const cause = error instanceof TRPCError ? (error.cause ?? error) : error;
  const known = fromCause(cause);
  if (known) return known;
  if (isDatabaseUnavailable(cause)) return databaseUnavailableProblem();
  if (error instanceof TRPCError && error.code !== "INTERNAL_SERVER_ERROR") {
    const status = statusOfCode(error.code);
    const slug = error.code.toLowerCase().replaceAll("_", "-");
    // tRPC's own refusals (a method or a body its adapter cannot take) keep tRPC's name for them.
    return { type: `${PROBLEM_TYPE_BASE}${slug}`, title: TITLES[status] ?? "Error", status, detail: error.message };
  }
  return problemOf("internal", "internal error");
}

/**
 * A path whose percent-escapes do not decode (a stray `%`, a cut-off escape, bytes that are not UTF-8): the
 * HTTP edge answers it before Next.js, whose own decoding would fail with a bare 500, and the REST
 * surface the same way should one get past.
 */
export const malformedPathProblem = (): Problem =>
  problemOf("validation", "The path is not valid percent-encoded UTF-8.", {
    errors: [{ field: "(path)", message: "must be valid percent-encoded UTF-8" }],
  });

/** The database is away (an outage, a restart): nothing was decided, retrying with the same key is safe. */
export function databaseUnavailableProblem(detail = "The database is unavailable; retry with the same Idempotency-Key."): Problem {
  return problemOf("database-unavailable", detail, { retryAfter: RETRY_AFTER_SECONDS });
}

function statusOfCode(code: TRPC_ERROR_CODE_KEY): number {
  for (const [status, c] of Object.entries(CODE_BY_STATUS)) if (c === code) return Number(status);
  // A body tRPC could not parse is the client's mistake, not an internal error.
  return code === "PARSE_ERROR" ? 400 : code === "METHOD_NOT_SUPPORTED" ? 405 : 500;
}

/**
 * The problem a client may see. An internal error says only "internal error"
 * and a request id; the error itself, with its SQL, parameters, stack and
 * causes, goes to the log under that id and nowhere else.
 */
export function publicProblem(error: unknown, context: Record<string, unknown> = {}): Problem {
  const problem = toProblem(error);
  if (problem.status !== 500) return problem;
  const requestId = randomUUID();
  logger.error({ err: error, requestId, ...context }, "internal error");
  return { ...problem, requestId };
}

/** Domain errors thrown in handlers become TRPCErrors with the right code (the problem rides along as `cause`). */
export function toTRPCError(error: unknown): TRPCError {
  if (error instanceof TRPCError) return error;
  const problem = toProblem(error);
  return new TRPCError({ code: trpcCodeFor(problem.status), message: problem.detail, cause: error });
}

/** Final outcomes are the decided business refusals; their problem bytes are stored. */
export function isFinal(error: TRPCError): boolean {
  return error.cause instanceof DomainError;
}

export const problemBody = (problem: Problem) => JSON.stringify(problem);

/** A business rule refused the request (insufficient funds, refund over the captured amount, ...). Never 409: clients retry 409. */
export class RuleViolationError extends DomainError<ProblemSlugOf<422>> {
  override readonly name = "RuleViolationError";
  constructor(slug: ProblemSlugOf<422>, message: string, extensions: Record<string, unknown> = {}) {
    super(slug, 422, message, extensions);
  }
}
