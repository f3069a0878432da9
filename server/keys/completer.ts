/**
 * The completer: finishes resumable operations whose client went away (the
 * tab closed, the phone went dark, the app died mid-charge and nobody
 * retried). It needs nothing new from the clients' path. For each due key
 * (server/idempotency/completion.ts) it runs the same procedure again through
 * a server-side caller, as the key's tenant, with `Idempotency-Key` set to
 * the stored key and the stored canonical request encoded back to its wire
 * form; the acquisition step takes the key over under a new fence (never one
 * whose holder still renews), the recoverable handler resumes at its
 * recovery point with the same downstream key, and the middleware stores
 * the result exactly as for a client retry, which a later retry replays.
 *
 * It runs in every instance (`start`, next to the expiry sweep), once from
 * `npm run keys:complete`, and for one key from the admin's "Resume now",
 * which reaches it through the request context. The composition root
 * (server/app.ts) builds it from the procedure registry, so it imports no
 * router.
 */
import { TRPCError } from "@trpc/server";
import type { Sql } from "postgres";
import { z } from "zod";
import { env } from "../env";
import {
  canonicalJson,
  claimDue,
  giveUp,
  IDEMPOTENCY_KEY_HEADER,
  IdempotencyEventType,
  IdempotencyKeyInProgressError,
  IdempotencyKeyMismatchError,
  IdempotencyLeaseLostError,
  markCompletedByCompleter,
  recordCompleterFailure,
  REPLAYED_HEADER,
  storedInput,
  type CompletionPolicy,
  type DueKey,
  type IdempotencyEventSink,
  type ResponseSink,
} from "../idempotency";
import { logger } from "../logger";
import type { ProcedureRegistry } from "../registry";
import { instrument } from "../observability";

/**
 * The defaults: the first retry about one interval after the first attempt,
 * doubling up to five minutes, eight attempts (about a quarter of an hour at
 * the default interval) before the key needs attention.
 */
export const completionPolicy = (intervalMs = env.COMPLETER_INTERVAL_MS): CompletionPolicy => ({
  maxAttempts: 8,
  backoffMs: Math.max(intervalMs, 100),
  maxBackoffMs: 5 * 60_000,
});

/**
 * How long after its client's claim a resumable operation is settled at the
 * latest, unless it needs attention: the client's lease, then every attempt's
 * backoff (a provider down all that time included). Reconciliation flags a
 * payment still pending after this.
 */
export function settleWithinMs(policy: CompletionPolicy = completionPolicy(), leaseMs = env.IDEMPOTENCY_LEASE_MS, intervalMs = env.COMPLETER_INTERVAL_MS): number {
  let total = leaseMs + intervalMs;
  for (let attempt = 0; attempt < policy.maxAttempts; attempt++) total += Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** attempt) + intervalMs;
  return total;
}

/** What one attempt on one key came to. */
export type KeyOutcome =
  /** This completer stored the result (a success, or a final refusal such as a decline). */
  | { tenantId: string; key: string; outcome: "completed"; status: number }
  /** Someone else had it: a client retry or another instance finished it, or still holds it. */
  | { tenantId: string; key: string; outcome: "not_ours"; detail: string }
  /** Not finished; tried again after the backoff, or, once the attempts are used up, needs attention. */
  | { tenantId: string; key: string; outcome: "retry_later" | "needs_attention"; detail: string };

export type RunOptions = Partial<CompletionPolicy> & {
  /** Keys taken up per round. */
  limit?: number;
  tenantId?: string;
  key?: string;
  /** The operator's "Resume now": the key need only be stale. */
  force?: boolean;
  sql?: Sql;
};

type Resumable = { input: z.ZodType };

/** A caller's context for one attempt: the key's tenant, its Idempotency-Key, the sink the middleware writes to. */
type AttemptContext = { tenant: { id: string; name: string }; headers: Headers; response: ResponseSink };

export type CompleterParts<TCtx> = {
  registry: ProcedureRegistry<TCtx>;
  createContext: (options: AttemptContext) => Promise<TCtx>;
  sql: () => Sql;
  onEvent: IdempotencyEventSink;
  /** Wraps every attempt (the failure lab records one on a lab run's key into that run). */
  around?: (key: string, response: ResponseSink, attempt: () => Promise<unknown>) => Promise<unknown>;
};

export type Completer = {
  /** One round: claim the due keys and run them (a few at a time). */
  completeDueKeys: (options?: RunOptions) => Promise<KeyOutcome[]>;
  /** The resumable procedures' paths (what the due-key query may take up). */
  resumableProcedures: () => string[];
  /** The loop of an instance: a round every `everyMs`. */
  start: (everyMs: number) => { stop: () => void };
};

/**
 * The stored canonical request, back in the form a client sends: decoded
 * input is encoded (amounts in minor units become "25.00") and must parse
 * again to exactly what was stored; otherwise the schema changed since and
 * nothing may run. Returns the wire input or why it cannot be used.
 */
function wireInput(due: DueKey, resumable: Resumable): { ok: true; input: unknown } | { ok: false; reason: string } {
  let stored: unknown;
  try {
    const parsed = storedInput(due.request);
    if (parsed.procedure !== due.procedure) return { ok: false, reason: "the stored request names another procedure" };
    stored = parsed.input;
  } catch {
    return { ok: false, reason: "the stored request is not valid JSON" };
  }
  const issues = (error: z.ZodError) => error.issues.map((i) => `${i.path.join(".") || "input"}: ${i.message}`).join("; ");
  const encoded = z.safeEncode(resumable.input, stored);
  if (!encoded.success) return { ok: false, reason: `the stored request no longer parses: ${issues(encoded.error)}` };
  const decoded = resumable.input.safeParse(encoded.data);
  if (!decoded.success) return { ok: false, reason: `the stored request no longer parses: ${issues(decoded.error)}` };
  if (canonicalJson(decoded.data) !== canonicalJson(stored)) return { ok: false, reason: "the stored request parses to a different request now" };
  return { ok: true, input: encoded.data };
}

/** A short, single-line reason for the key row (operators read it on the dashboard). */
function describe(error: unknown): string {
  const cause = error instanceof TRPCError && error.cause ? error.cause : error;
  const text = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
  return text.replace(/\s+/g, " ").slice(0, 500);
}

/** Runs one claimed key through its procedure and records what came of it. */
async function runKey<TCtx>(parts: CompleterParts<TCtx>, sql: Sql, due: DueKey, resumable: Resumable, policy: CompletionPolicy): Promise<KeyOutcome> {
  const ref = { tenantId: due.tenantId, key: due.key };
  const event = (type: (typeof IdempotencyEventType)[keyof typeof IdempotencyEventType]) =>
    parts.onEvent({ type, tenantId: due.tenantId, key: due.key, procedure: due.procedure });
  const wire = wireInput(due, resumable);
  if (!wire.ok) {
    await giveUp(sql, ref, wire.reason);
    event(IdempotencyEventType.CompleterGaveUp);
    logger.warn({ key: due.key, tenantId: due.tenantId, reason: wire.reason }, "completer: the key needs attention");
    return { ...ref, outcome: "needs_attention", detail: wire.reason };
  }
  event(IdempotencyEventType.CompleterAttempt);

  const response: ResponseSink = { headers: new Headers() };
  const ctx = await parts.createContext({
    tenant: { id: due.tenantId, name: due.tenantId },
    headers: new Headers({ [IDEMPOTENCY_KEY_HEADER]: due.key }),
    response,
  });
  const attempt = () => parts.registry.call(ctx, due.procedure, wire.input);

  let failure: unknown;
  try {
    await (parts.around ? parts.around(due.key, response, attempt) : attempt());
  } catch (error) {
    failure = error;
  }
  const replayed = response.headers.get(REPLAYED_HEADER) === "true";
  if (response.status !== undefined && !replayed) {
    // The middleware stored this attempt's result (a success or a final refusal).
    await markCompletedByCompleter(sql, ref);
    logger.info({ key: due.key, tenantId: due.tenantId, procedure: due.procedure, status: response.status }, "completer: finished a key its client left");
    return { ...ref, outcome: "completed", status: response.status };
  }
  const cause = failure instanceof TRPCError ? failure.cause : undefined;
  if (replayed || cause instanceof IdempotencyKeyInProgressError || cause instanceof IdempotencyLeaseLostError) {
    // A client retry or another instance got there first: nothing to do, nothing to alarm anyone about.
    const detail = replayed ? "already finished" : "held by another attempt";
    logger.debug({ key: due.key, tenantId: due.tenantId, detail }, "completer: lost the key to another attempt");
    return { ...ref, outcome: "not_ours", detail };
  }
  if (cause instanceof IdempotencyKeyMismatchError) {
    const reason = "the stored request no longer matches the key's fingerprint";
    await giveUp(sql, ref, reason);
    event(IdempotencyEventType.CompleterGaveUp);
    return { ...ref, outcome: "needs_attention", detail: reason };
  }
  const detail = describe(failure);
  const { gaveUp } = await recordCompleterFailure(sql, ref, detail, policy.maxAttempts);
  if (gaveUp) {
    event(IdempotencyEventType.CompleterGaveUp);
    logger.warn({ key: due.key, tenantId: due.tenantId, attempt: due.attempt, detail }, "completer: attempts used up, the key needs attention");
    return { ...ref, outcome: "needs_attention", detail };
  }
  logger.info({ key: due.key, tenantId: due.tenantId, attempt: due.attempt, detail }, "completer: not finished yet, will try again");
  return { ...ref, outcome: "retry_later", detail };
}

/** The completer over `parts.registry`'s resumable procedures: those built with `{ resumable: true }` and one input schema. */
export function createCompleter<TCtx>(parts: CompleterParts<TCtx>): Completer {
  const resumables = new Map<string, Resumable>();
  for (const p of parts.registry.procedures) if (p.meta.resumable && p.input) resumables.set(p.path, { input: p.input });

  const completeDueKeys = async (options: RunOptions = {}): Promise<KeyOutcome[]> => {
    const sql = options.sql ?? parts.sql();
    const policy = { ...completionPolicy(), ...definedOnly({ maxAttempts: options.maxAttempts, backoffMs: options.backoffMs, maxBackoffMs: options.maxBackoffMs }) };
    const due = await claimDue(sql, {
      ...policy,
      procedures: [...resumables.keys()],
      limit: options.limit ?? 20,
      ...definedOnly({ tenantId: options.tenantId, key: options.key, force: options.force }),
    });
    return Promise.all(due.map((d) => instrument.completerRun(d.procedure, () => runKey(parts, sql, d, resumables.get(d.procedure)!, policy))));
  };
  return { completeDueKeys, resumableProcedures: () => [...resumables.keys()], start: (everyMs) => startLoop(everyMs, completeDueKeys) };
}

function definedOnly<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The completer loop of an instance: a round every `everyMs`, never two at
 * once. Stopping ends the loop; a round still running at shutdown ends with
 * the process, and its key is finished after its lease like any crash.
 */
function startLoop(everyMs: number, completeDueKeys: Completer["completeDueKeys"]) {
  if (everyMs <= 0) return { stop: () => undefined };
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    completeDueKeys(completionPolicy(everyMs))
      .catch((err: unknown) => logger.error({ err }, "completer round failed"))
      .finally(() => (running = false));
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
