/**
 * A tRPC link that retries idempotent mutations safely. A mutation called
 * with `context: { idempotencyKey }` is retried — with that same key on every
 * attempt — after a network error, a `409` (after its `Retry-After`) or a
 * `5xx`, with exponential backoff and full jitter, a bounded number of times.
 * Anything else (`422`, other `4xx`) is an answer and is never retried.
 * Mutations without a key pass through untouched.
 *
 * One retry loop per key at a time: a second call with a key whose loop is
 * still running (a second click, a resumed reload) sends nothing of its own;
 * it joins the running loop and gets its answer.
 *
 * Every send also says how many times this link has sent the key
 * (`Idempotency-Attempt`, 1 for the first): nothing can be stored under a key
 * never sent, so the server runs a first send without looking for a stored
 * answer. A link that forgot the key (a reload that resumes it) says 1
 * again, which costs the server a handler run it rolls back before it
 * replays, never a second execution.
 *
 * Put it before a non-batching `httpLink` whose `headers` sends the key
 * (`idempotencyHeaders`): a batch shares one set of headers.
 */
import type { TRPCLink } from "@trpc/client";
import { TRPCClientError } from "@trpc/client";
import type { AnyRouter } from "@trpc/server";
import { observable } from "@trpc/server/observable";

export type AttemptResult = "sent" | "joined" | "succeeded" | "network-error" | "in-progress" | "server-error" | "refused" | "gave-up";

export type Attempt = {
  key: string;
  attempt: number;
  outcome: AttemptResult;
  status?: number;
  /** The server answered from its stored result (Idempotent-Replayed). */
  replayed?: boolean;
  /** When the next attempt goes out. */
  retryInMs?: number;
  at: number;
};

export type IdempotencyLinkOptions = {
  /** Attempts in all, the first included. */
  maxAttempts?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  onAttempt?: (attempt: Attempt) => void;
  random?: () => number;
};

type Meta = { response?: { status?: number; headers?: { get(name: string): string | null } } };

/** For httpLink's `headers`: the operation's key as the Idempotency-Key header, and which send of it this is. */
export function idempotencyHeaders({ op }: { op: { context: Record<string, unknown> } }): Record<string, string> {
  const { idempotencyKey: key, idempotencyAttempt: attempt } = op.context;
  if (typeof key !== "string") return {};
  return typeof attempt === "number" ? { "Idempotency-Key": key, "Idempotency-Attempt": String(attempt) } : { "Idempotency-Key": key };
}

/** How many keys a link remembers having sent; past that the oldest is forgotten (its next send says 1 again). */
const REMEMBERED_KEYS = 1_000;

/** What a failed attempt means for the next one. */
export function classify(error: unknown): { outcome: AttemptResult; status?: number; retryAfterMs?: number } {
  const meta = error instanceof TRPCClientError ? (error.meta as Meta | undefined) : undefined;
  const status =
    (error instanceof TRPCClientError ? (error.data as { httpStatus?: number } | undefined)?.httpStatus : undefined) ??
    meta?.response?.status;
  if (status === undefined) return { outcome: "network-error" };
  if (status === 409) {
    const seconds = Number(meta?.response?.headers?.get("retry-after"));
    return { outcome: "in-progress", status, retryAfterMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined };
  }
  if (status >= 500) return { outcome: "server-error", status };
  return { outcome: "refused", status };
}

export function idempotencyLink<TRouter extends AnyRouter>(options: IdempotencyLinkOptions = {}): TRPCLink<TRouter> {
  const maxAttempts = options.maxAttempts ?? 6;
  const base = options.baseDelayMs ?? 250;
  const cap = options.maxDelayMs ?? 8_000;
  const random = options.random ?? Math.random;
  const report = options.onAttempt ?? (() => undefined);

  type Observer = { next(value: never): void; error(error: never): void; complete(): void };
  type Loop = { observers: Set<Observer>; attempt: number; stop(): void };
  /** The running loop of each key; a loop leaves when it settles or when nobody waits for it any more. */
  const loops = new Map<string, Loop>();
  /** How often each key was sent, oldest key first, so that a later loop for a key goes on counting. */
  const sends = new Map<string, number>();
  const sent = (key: string): number => {
    const count = (sends.get(key) ?? 0) + 1;
    sends.delete(key);
    sends.set(key, count);
    if (sends.size > REMEMBERED_KEYS) sends.delete(sends.keys().next().value!);
    return count;
  };

  return () =>
    ({ op, next }) => {
      const key = op.context.idempotencyKey;
      if (op.type !== "mutation" || typeof key !== "string") return next(op);
      return observable((observer) => {
        const running = loops.get(key);
        if (running) {
          running.observers.add(observer as Observer);
          report({ key, attempt: running.attempt, outcome: "joined", at: Date.now() });
          return () => {
            running.observers.delete(observer as Observer);
          };
        }
        let attempt = 0;
        let timer: ReturnType<typeof setTimeout> | undefined;
        let current: { unsubscribe(): void } | undefined;
        const loop: Loop = {
          observers: new Set([observer as Observer]),
          attempt,
          stop: () => {
            clearTimeout(timer);
            current?.unsubscribe();
          },
        };
        loops.set(key, loop);
        /** Everyone waiting, once: the loop settles a single time, then is gone. */
        const everyone = () => {
          if (loops.get(key) === loop) loops.delete(key);
          const waiting = [...loop.observers] as (typeof observer)[];
          loop.observers.clear();
          return waiting;
        };

        const run = () => {
          attempt += 1;
          loop.attempt = attempt;
          report({ key, attempt, outcome: "sent", at: Date.now() });
          current = next({ ...op, context: { ...op.context, idempotencyAttempt: sent(key) } }).subscribe({
            next(value) {
              const headers = (value.context as Meta | undefined)?.response?.headers;
              report({ key, attempt, outcome: "succeeded", replayed: headers?.get("idempotent-replayed") === "true", at: Date.now() });
              // Those who joined get the answer too; the loop is over for anyone who calls next.
              for (const o of everyone()) {
                o.next(value);
                o.complete();
              }
            },
            error(error) {
              const { outcome, status, retryAfterMs } = classify(error);
              if (outcome === "refused" || attempt >= maxAttempts) {
                const replayed =
                  error instanceof TRPCClientError &&
                  (error.meta as Meta | undefined)?.response?.headers?.get("idempotent-replayed") === "true";
                report({ key, attempt, outcome: outcome === "refused" ? "refused" : "gave-up", status, replayed, at: Date.now() });
                for (const o of everyone()) o.error(error);
                return;
              }
              // Full jitter spreads the retries of many clients; Retry-After is the server's floor.
              const jitter = Math.floor(random() * Math.min(cap, base * 2 ** (attempt - 1)));
              const retryInMs = Math.max(jitter, retryAfterMs ?? 0);
              report({ key, attempt, outcome, status, retryInMs, at: Date.now() });
              timer = setTimeout(run, retryInMs);
            },
            complete() {
              for (const o of everyone()) o.complete();
            },
          });
        };
        run();
        return () => {
          loop.observers.delete(observer as Observer);
          // The last one waiting let go: the loop stops and a later call starts afresh.
          if (loop.observers.size === 0 && loops.get(key) === loop) {
            loops.delete(key);
            loop.stop();
          }
        };
      });
    };
}
