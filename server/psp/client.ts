/**
 * The app's client for the payment provider.
 *
 * Every call carries the caller's downstream key as `Idempotency-Key`, the
 * same on every attempt, so retrying here can never charge twice: the
 * provider answers a repeat with the original result. That is what makes it
 * safe to retry timeouts, network errors and 5xx (a bounded number of times,
 * exponential backoff with full jitter). A 4xx is the provider's decision and
 * is never retried.
 *
 * Results are values, not exceptions: `ok`, `declined` (402), `rejected`
 * (any other 4xx) or `unknown` when the last attempt still did not tell us
 * what happened at the provider. `unknown` is not a failure: the charge may
 * exist, and only a later call with the same key finds out.
 */
import type { z } from "zod";
import {
  chargeListSchema,
  chargeSchema,
  errorBodySchema,
  keyLookupSchema,
  refundSchema,
  type Charge,
  type ChargeInput,
  type ChargeWithRefunds,
  type KeyLookup,
  type Refund,
} from "./schemas";

export type { Charge, ChargeInput, ChargeWithRefunds, KeyLookup, Refund } from "./schemas";

export type PspClientOptions = {
  baseUrl: string;
  /** Per attempt, not per call. */
  timeoutMs: number;
  /** Attempts in total, the first included. */
  attempts?: number;
  /** The backoff before retry n is drawn from [0, baseDelayMs * 2^(n-1)). */
  baseDelayMs?: number;
  /**
   * Told of every attempt's outcome (the failure lab draws provider calls from it). Awaited before
   * the call returns, so what it records is there when the caller records the outcome; it must not throw.
   */
  observe?: (call: ObservedCall) => void | Promise<void>;
  /** The transport; the global fetch unless given (the failure lab cuts the provider off for one run with it). */
  fetch?: typeof fetch;
};

/** One attempt as `observe` sees it: the request, and its status or the error that left it unanswered. */
export type ObservedCall = {
  method: string;
  path: string;
  key?: string;
  body?: unknown;
  status?: number;
  replayed: boolean;
  error?: string;
  elapsedMs: number;
};

export type PspDeclined = { kind: "declined"; reason: string; message?: string };
export type PspRejected = { kind: "rejected"; status: number; type: string; message?: string };
export type PspUnknown = { kind: "unknown"; cause: PspOutcomeUnknownError };
export type PspFailure = PspDeclined | PspRejected | PspUnknown;

export type ChargeResult = { kind: "ok"; charge: Charge } | PspFailure;
export type RefundResult = { kind: "ok"; refund: Refund } | PspFailure;
export type ChargeListResult = { kind: "ok"; charges: ChargeWithRefunds[] } | PspFailure;
/** `found: null`: the provider never saw the key (or only answered it with a 5xx, which it does not keep). */
export type KeyLookupResult = { kind: "ok"; found: KeyLookup | null } | PspFailure;

/** The provider may or may not have acted; `cause` is what went wrong on the last attempt. */
export class PspOutcomeUnknownError extends Error {
  override readonly name = "PspOutcomeUnknownError";
  constructor(
    message: string,
    readonly attempts: number,
    options: { cause: unknown },
  ) {
    super(message, options);
  }
}

/** A 5xx answer, kept as the cause of an unknown outcome. */
export class PspServerError extends Error {
  override readonly name = "PspServerError";
  constructor(
    readonly status: number,
    readonly type: string | undefined,
  ) {
    super(`The provider answered ${status}${type ? ` (${type})` : ""}.`);
  }
}

/** A 2xx whose body is not what the provider promised: the effect happened, but we cannot read it. */
export class PspProtocolError extends Error {
  override readonly name = "PspProtocolError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

const MAX_BACKOFF_MS = 5_000;

type Call = { method: "GET" | "POST"; path: string; body?: unknown; key?: string };
type Ok<T> = { kind: "ok"; value: T };

export type PspClient = ReturnType<typeof createPspClient>;

export function createPspClient(options: PspClientOptions) {
  const attempts = Math.max(1, options.attempts ?? 3);
  const baseDelayMs = options.baseDelayMs ?? 100;
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const transport = options.fetch ?? fetch;

  /** One request: a decided answer, or the error that leaves the outcome open. */
  async function attempt<S extends z.ZodType>(call: Call, schema: S): Promise<Ok<z.output<S>> | PspDeclined | PspRejected | Error> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (call.body !== undefined) headers["content-type"] = "application/json";
    if (call.key !== undefined) headers["idempotency-key"] = call.key;
    let status: number;
    let text: string;
    const sentAt = performance.now();
    try {
      const response = await transport(`${baseUrl}${call.path}`, {
        method: call.method,
        headers,
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      status = response.status;
      text = await response.text();
      await options.observe?.({
        method: call.method,
        path: call.path,
        key: call.key,
        body: call.body,
        status,
        replayed: response.headers.get("idempotent-replayed") === "true",
        elapsedMs: performance.now() - sentAt,
      });
    } catch (error) {
      await options.observe?.({
        method: call.method,
        path: call.path,
        key: call.key,
        body: call.body,
        replayed: false,
        error: error instanceof Error ? error.name : "error",
        elapsedMs: performance.now() - sentAt,
      });
      return error instanceof Error ? error : new Error(String(error));
    }
    if (status >= 500) return new PspServerError(status, errorBodySchema.safeParse(safeJson(text)).data?.error.type);
    if (status >= 400) return refusal(status, text);
    const parsed = schema.safeParse(safeJson(text));
    if (parsed.success) return { kind: "ok", value: parsed.data };
    return new PspProtocolError(`Unexpected ${status} answer from ${call.method} ${call.path}.`, { cause: parsed.error });
  }

  async function send<S extends z.ZodType>(call: Call, schema: S): Promise<Ok<z.output<S>> | PspFailure> {
    for (let n = 1; ; n++) {
      const outcome = await attempt(call, schema);
      if (!(outcome instanceof Error)) return outcome;
      // A garbled success would only be replayed as it is, so it is not worth another attempt.
      if (n >= attempts || outcome instanceof PspProtocolError) {
        const message = `${call.method} ${call.path}: no usable answer after ${n} attempt(s); the outcome at the provider is unknown.`;
        return { kind: "unknown", cause: new PspOutcomeUnknownError(message, n, { cause: outcome }) };
      }
      await sleep(Math.random() * Math.min(MAX_BACKOFF_MS, baseDelayMs * 2 ** (n - 1)));
    }
  }

  const chargeCall = async (call: Call): Promise<ChargeResult> => {
    const result = await send(call, chargeSchema);
    return result.kind === "ok" ? { kind: "ok", charge: result.value } : result;
  };
  const segment = encodeURIComponent;

  return {
    charge: (input: ChargeInput, downstreamKey: string): Promise<ChargeResult> =>
      chargeCall({ method: "POST", path: "/charges", body: input, key: downstreamKey }),

    capture: (chargeId: string, downstreamKey: string): Promise<ChargeResult> =>
      chargeCall({ method: "POST", path: `/charges/${segment(chargeId)}/capture`, body: {}, key: downstreamKey }),

    void: (chargeId: string, downstreamKey: string): Promise<ChargeResult> =>
      chargeCall({ method: "POST", path: `/charges/${segment(chargeId)}/void`, body: {}, key: downstreamKey }),

    async refund(chargeId: string, amount: number, downstreamKey: string): Promise<RefundResult> {
      const call: Call = { method: "POST", path: `/charges/${segment(chargeId)}/refunds`, body: { amount }, key: downstreamKey };
      const result = await send(call, refundSchema);
      return result.kind === "ok" ? { kind: "ok", refund: result.value } : result;
    },

    /** Read-only: what the provider did under a downstream key (no charge is made or changed). */
    async lookupKey(downstreamKey: string): Promise<KeyLookupResult> {
      const result = await send({ method: "GET", path: `/keys/${segment(downstreamKey)}` }, keyLookupSchema);
      if (result.kind === "ok") return { kind: "ok", found: result.value };
      if (result.kind === "rejected" && result.status === 404 && result.type === "unknown_key") return { kind: "ok", found: null };
      return result;
    },

    async listCharges(): Promise<ChargeListResult> {
      const result = await send({ method: "GET", path: "/charges" }, chargeListSchema);
      return result.kind === "ok" ? { kind: "ok", charges: result.value.data } : result;
    },
  };
}

function refusal(status: number, text: string): PspDeclined | PspRejected {
  const error = errorBodySchema.safeParse(safeJson(text)).data?.error;
  const type = error?.type ?? "unknown";
  if (status === 402) return { kind: "declined", reason: type, message: error?.message };
  return { kind: "rejected", status, type, message: error?.message };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
