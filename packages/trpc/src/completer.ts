/**
 * The completer: finishes resumable operations whose client went away (the
 * tab closed, the phone went dark, the process died mid-charge and nobody
 * retried). For each due key (completion.ts) the app runs the same procedure
 * again with `Idempotency-Key` set to the stored key (`rerun`: the package
 * knows no router); the acquisition takes the key over under a new fence
 * (never one whose holder still renews), the recoverable handler resumes at
 * its recovery point with the same downstream key, and the middleware stores
 * the result exactly as for a client retry, which a later retry replays.
 *
 * An app starts the loop in every instance (`start`), and may run a round
 * itself (a CLI, an operator's "Resume now" for one key).
 */
import { TRPCError } from "@trpc/server";
import type { Sql } from "postgres";
import {
  claimDue,
  giveUp,
  markCompletedByCompleter,
  recordCompleterFailure,
  storedInput,
  type CompletionPolicy,
  type DueKey,
} from "./completion.js";
import { IdempotencyKeyInProgressError, IdempotencyKeyMismatchError, IdempotencyLeaseLostError } from "./errors.js";
import { IdempotencyEventType } from "./events.js";
import { IDEMPOTENCY_KEY_HEADER } from "./key.js";
import { runIdempotent, type IdempotentCall } from "./outcome.js";
import type { IdempotencyEventSink } from "./types.js";

export type { CompletionPolicy } from "./completion.js";

/**
 * Thrown by `rerun` when the stored request can no longer be run (the input
 * schema changed since it was stored): the completer gives up on the key at
 * once, with this message as the reason an operator reads.
 */
export class NotResumableError extends Error {
  override readonly name = "NotResumableError";
}

/** A key the completer takes up. */
export type DueRef = { tenantId: string; key: string; procedure: string };

/**
 * Runs the key's procedure again: as `due.tenantId`, with `input` (the
 * stored canonical input) and with `call` in the procedure's context (its
 * `headers` carry the key, its `outcomes` get what the middleware decided:
 * `runIdempotent`), the way the app's own server-side caller does.
 */
export type Rerun = (due: DueRef & { input: unknown }, call: IdempotentCall) => Promise<unknown>;

/** Pino-style: fields first, then the message. */
type Log = Record<"debug" | "info" | "warn" | "error", (fields: Record<string, unknown>, message: string) => void>;

export type CompleterOptions = {
  sql: () => Sql;
  /** The paths of the procedures the completer may run again (recoverable ones whose input it can rebuild). */
  procedures: readonly string[];
  rerun: Rerun;
  /** Defaults: `completionPolicy(everyMs)` in the loop, `completionPolicy()` otherwise. */
  policy?: Partial<CompletionPolicy>;
  onEvent?: IdempotencyEventSink;
  log?: Log;
  /** Wraps the handling of one key (a trace span, a metric of outcomes, a lab run's record). */
  aroundKey?: (due: DueRef, run: () => Promise<KeyCompletion>) => Promise<KeyCompletion>;
};

/** What the completer's attempt on one key came to. */
export type KeyCompletion =
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

export type Completer = {
  /** One round: claim the due keys and run them (a few at a time). */
  completeDueKeys: (options?: RunOptions) => Promise<KeyCompletion[]>;
  /** The loop of an instance: a round every `everyMs`, never two at once; 0 starts nothing. */
  start: (everyMs: number) => { stop: () => void };
};

/**
 * The defaults: the first retry about one interval after the first attempt,
 * doubling up to five minutes, eight attempts (about a quarter of an hour at
 * a 5 s interval) before the key needs attention.
 */
export const completionPolicy = (intervalMs = 5000): CompletionPolicy => ({
  maxAttempts: 8,
  backoffMs: Math.max(intervalMs, 100),
  maxBackoffMs: 5 * 60_000,
});

/**
 * How long after its client's claim a resumable operation is settled at the
 * latest, unless it needs attention: the client's lease, then every attempt's
 * backoff (a provider down all that time included).
 */
export function settleWithinMs(policy: CompletionPolicy, leaseMs: number, intervalMs: number): number {
  let total = leaseMs + intervalMs;
  for (let attempt = 0; attempt < policy.maxAttempts; attempt++)
    total += Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** attempt) + intervalMs;
  return total;
}

/** A short, single-line reason for the key row (operators read it). */
function describe(error: unknown): string {
  const cause = error instanceof TRPCError && error.cause ? error.cause : error;
  const text = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
  return text.replace(/\s+/g, " ").slice(0, 500);
}

const quiet: Log = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

function definedOnly<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function createCompleter(options: CompleterOptions): Completer {
  const log = options.log ?? quiet;

  /** Runs one claimed key through its procedure and records what came of it. */
  async function runKey(sql: Sql, due: DueKey, policy: CompletionPolicy): Promise<KeyCompletion> {
    const ref = { tenantId: due.tenantId, key: due.key };
    const fields = { key: due.key, tenantId: due.tenantId, procedure: due.procedure, attempt: due.attempt };
    const event = (type: IdempotencyEventType) =>
      options.onEvent?.({ type, tenantId: due.tenantId, key: due.key, procedure: due.procedure });
    const needsAttention = async (reason: string): Promise<KeyCompletion> => {
      await giveUp(sql, ref, reason);
      event(IdempotencyEventType.CompleterGaveUp);
      log.warn({ ...fields, reason }, "completer: the key needs attention");
      return { ...ref, outcome: "needs_attention", detail: reason };
    };

    let input: unknown;
    try {
      const stored = storedInput(due.request);
      if (stored.procedure !== due.procedure) return await needsAttention("the stored request names another procedure");
      input = stored.input;
    } catch {
      return await needsAttention("the stored request is not valid JSON");
    }
    event(IdempotencyEventType.CompleterAttempt);

    const { result, outcome } = await runIdempotent(new Headers({ [IDEMPOTENCY_KEY_HEADER]: due.key }), (call) =>
      options.rerun({ tenantId: due.tenantId, key: due.key, procedure: due.procedure, input }, call),
    );
    const failure = result.ok ? undefined : result.error;
    if (outcome?.decision === "executed" && outcome.stored) {
      // The middleware stored this attempt's result (a success or a final refusal).
      await markCompletedByCompleter(sql, ref);
      log.info({ ...fields, status: outcome.stored.status }, "completer: finished a key its client left");
      return { ...ref, outcome: "completed", status: outcome.stored.status };
    }
    if (failure instanceof NotResumableError) return needsAttention(failure.message);
    const problem = outcome?.decision === "refused" ? outcome.problem : undefined;
    if (
      outcome?.decision === "replayed" ||
      problem instanceof IdempotencyKeyInProgressError ||
      problem instanceof IdempotencyLeaseLostError
    ) {
      // A client retry or another instance got there first: nothing to do, nothing to alarm anyone about.
      const detail = outcome?.decision === "replayed" ? "already finished" : "held by another attempt";
      log.debug({ ...fields, detail }, "completer: lost the key to another attempt");
      return { ...ref, outcome: "not_ours", detail };
    }
    if (problem instanceof IdempotencyKeyMismatchError) return needsAttention("the stored request no longer matches the key's fingerprint");
    const detail = describe(failure);
    const { gaveUp } = await recordCompleterFailure(sql, ref, detail, policy.maxAttempts);
    if (gaveUp) {
      event(IdempotencyEventType.CompleterGaveUp);
      log.warn({ ...fields, detail }, "completer: attempts used up, the key needs attention");
      return { ...ref, outcome: "needs_attention", detail };
    }
    log.info({ ...fields, detail }, "completer: not finished yet, will try again");
    return { ...ref, outcome: "retry_later", detail };
  }

  const completeDueKeys = async (run: RunOptions = {}): Promise<KeyCompletion[]> => {
    const sql = run.sql ?? options.sql();
    const policy = {
      ...completionPolicy(),
      ...options.policy,
      ...definedOnly({ maxAttempts: run.maxAttempts, backoffMs: run.backoffMs, maxBackoffMs: run.maxBackoffMs }),
    };
    const due = await claimDue(sql, {
      ...policy,
      procedures: options.procedures,
      limit: run.limit ?? 20,
      ...definedOnly({ tenantId: run.tenantId, key: run.key, force: run.force }),
    });
    const around = options.aroundKey ?? ((_due: DueRef, go: () => Promise<KeyCompletion>) => go());
    return Promise.all(due.map((d) => around({ tenantId: d.tenantId, key: d.key, procedure: d.procedure }, () => runKey(sql, d, policy))));
  };

  /**
   * Stopping ends the loop; a round still running at shutdown ends with the
   * process, and its key is finished after its lease like any crash.
   */
  const start = (everyMs: number) => {
    if (everyMs <= 0) return { stop: () => undefined };
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      completeDueKeys({ ...completionPolicy(everyMs), ...options.policy })
        .catch((err: unknown) => log.error({ err }, "completer round failed"))
        .finally(() => (running = false));
    }, everyMs);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  };
  return { completeDueKeys, start };
}
