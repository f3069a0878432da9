/**
 * One class per outcome a caller can meet. Each carries what an operator needs
 * to understand it (never the stored result of someone else's request) and
 * knows its HTTP status; the app maps them to problem+json and tRPC codes.
 */
import type { TRPC_ERROR_CODE_KEY } from "@trpc/server";

export abstract class IdempotencyError extends Error {
  abstract readonly status: number;
  abstract readonly code: TRPC_ERROR_CODE_KEY;
  /** A short, stable name for the problem type, e.g. "idempotency-key-mismatch". */
  abstract readonly problem: string;
}

export class IdempotencyKeyMissingError extends IdempotencyError {
  override readonly name = "IdempotencyKeyMissingError";
  readonly status = 400;
  readonly code = "BAD_REQUEST";
  readonly problem = "idempotency-key-missing";
  constructor() {
    super("This request needs an Idempotency-Key header: a unique value per logical operation, reused on every retry of it.");
  }
}

export class IdempotencyKeyInvalidError extends IdempotencyError {
  override readonly name = "IdempotencyKeyInvalidError";
  readonly status = 400;
  readonly code = "BAD_REQUEST";
  readonly problem = "idempotency-key-invalid";
  /** `reason`: what is wrong with a structured-field value; without it, the key's length or characters. */
  constructor(
    readonly length: number,
    reason?: string,
  ) {
    super(
      reason
        ? `The Idempotency-Key header ${reason}.`
        : "The Idempotency-Key header must be 1 to 255 visible ASCII characters (0x21–0x7E).",
    );
  }
}

export class IdempotencyKeyMismatchError extends IdempotencyError {
  override readonly name = "IdempotencyKeyMismatchError";
  readonly status = 422;
  readonly code = "UNPROCESSABLE_CONTENT";
  readonly problem = "idempotency-key-mismatch";
  constructor(
    readonly key: string,
    readonly storedProcedure: string,
  ) {
    super("This Idempotency-Key was first used for a different request; use a new key for a new operation.");
  }
}

export class IdempotencyKeyInProgressError extends IdempotencyError {
  override readonly name = "IdempotencyKeyInProgressError";
  readonly status = 409;
  readonly code = "CONFLICT";
  readonly problem = "idempotency-key-in-progress";
  constructor(
    readonly key: string,
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super("A request with this Idempotency-Key is still being processed; retry after the time given in Retry-After.", options);
  }
}

/**
 * Thrown to a holder whose lease ran out and whose key another attempt took
 * over: it must stop, it can no longer complete the key.
 */
export class IdempotencyLeaseLostError extends IdempotencyError {
  override readonly name = "IdempotencyLeaseLostError";
  readonly status = 409;
  readonly code = "CONFLICT";
  readonly problem = "idempotency-lease-lost";
  readonly retryAfterSeconds = 1;
  constructor(
    readonly key: string,
    readonly fence: number,
  ) {
    super("This attempt lost its claim on the Idempotency-Key to a newer attempt; retry to get that attempt's result.");
  }
}
