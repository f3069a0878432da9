/**
 * A tRPC procedure, seen from outside the idempotency middleware: its span,
 * and for an idempotent one the spans of the key's acquisition and of the
 * handler, and the one outcome the request is counted under.
 *
 * The middleware reports what happens to a key through its `onEvent` port,
 * with the call's tRPC context. `observeProcedure` places the request's
 * scope in that context; the app's one runtime (`observedSink`) files each
 * event under it as a span event, and the hooks it runs around the
 * acquisition and the handler (its `around`) find it there too. A request
 * gets its call and its scope, nothing else: no runtime, no closures, and
 * no AsyncLocalStorage of the plug-in's own (on Node.js 20 every store a
 * request runs in is carried over to each promise it makes). The request
 * is counted once, when the procedure answers, under what the middleware
 * decided for it (its outcome).
 *
 * A replay answered at once, the hot path, is one span: its decision and
 * fence go on the procedure's span, since a child span covering the same
 * lookup would tell nothing more (and cost as much as the rest of the
 * tracing). Every other acquisition (a claim, a takeover, a wait, a
 * refusal, an error) gets its span, started at the middleware's start.
 */
import { context, isSpanContextValid, SpanStatusCode, trace, TraceFlags, type Span } from "@opentelemetry/api";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import type { TRPCError } from "@trpc/server";
import { ATTR_RPC_METHOD, ATTR_RPC_SYSTEM } from "@opentelemetry/semantic-conventions/incubating";
import {
  IdempotencyEventType as E,
  IdempotencyKeyInProgressError,
  IdempotencyKeyMismatchError,
  IdempotencyLeaseLostError,
  type IdempotencyError,
  type IdempotencyEvent,
  type IdempotencyEventSink,
  type IdempotencyOutcome,
} from "@exactly-once/trpc";
import { metrics, OutcomeLabel } from "./metrics";
import { observing } from "./switch";
import { tracer } from "./tracing";

type Scope = {
  /** The procedure's span: recorded or not, it carries the trace id. */
  span: Span;
  /** What the middleware decided for this call, then handed on to the request's list, which a tRPC batch's calls share. */
  outcomes: IdempotencyOutcome[];
  /** Whether the procedure's trace is recorded: an unsampled one gets no child spans and no span events, only its metrics. */
  recording: boolean;
  /** When the idempotency middleware started (performance.now()), until the key is taken or the request answered without it. */
  acquireFrom?: number;
  /** The acquisition's span, once it has something to show (see `acquisition`). */
  acquire?: Span;
  /** Open while the handler runs under the key. */
  handler?: Span;
};

/** Where the acquisition's and the handler's hooks find the request's scope in its tRPC context. */
const SCOPE = Symbol("observation");
type Observed = { [SCOPE]?: Scope };

/** The refusals of a key the middleware read; one before (no key, a malformed one) is no idempotency outcome. */
function refusedLabel(problem: IdempotencyError): OutcomeLabel | undefined {
  if (problem instanceof IdempotencyKeyMismatchError) return OutcomeLabel.Mismatch;
  if (problem instanceof IdempotencyKeyInProgressError) return OutcomeLabel.Conflict;
  if (problem instanceof IdempotencyLeaseLostError) return OutcomeLabel.LeaseLost;
  return undefined;
}

/**
 * How the request ended, from what the middleware decided. A decision never says "failed": that is a call executed
 * without a stored answer (its key released for a retry), or a 5xx with no decision (the database lost mid-call).
 */
function outcomeLabel(outcome: IdempotencyOutcome | undefined, result: Result): OutcomeLabel | undefined {
  if (outcome?.decision === "refused") return refusedLabel(outcome.problem);
  if (outcome?.decision === "replayed") return outcome.waitedMs > 0 ? OutcomeLabel.Waited : OutcomeLabel.Replayed;
  if (outcome?.stored) return outcome.taken === "takeover" ? OutcomeLabel.Takeover : OutcomeLabel.Executed;
  return outcome || (!result.ok && getHTTPStatusCodeFromError(result.error) >= 500) ? OutcomeLabel.Failed : undefined;
}

const DECISION: Partial<Record<IdempotencyEvent["type"], string>> = {
  [E.Claimed]: "claim",
  [E.Takeover]: "takeover",
  [E.Expired]: "replace",
  [E.Replayed]: "replay",
  [E.Mismatch]: "mismatch",
  [E.Conflict]: "conflict",
};

type Result = { ok: true } | { ok: false; error: TRPCError };

/**
 * Exports every outcome of each idempotent procedure at 0. A series that
 * appears only with its first request has no earlier sample, so `rate()` and
 * `increase()` (the alert rules') miss that request: the first conflict
 * storm after a deploy would go unseen for a scrape interval or more.
 */
export function countFromZero(procedures: readonly string[]): void {
  const m = metrics();
  for (const procedure of procedures) {
    for (const outcome of Object.values(OutcomeLabel)) {
      m.requests.inc({ procedure, outcome }, 0);
      m.requestDuration.zero({ procedure, outcome });
    }
  }
}

type ProcedureOptions<R> = {
  ctx: { outcomes: IdempotencyOutcome[] };
  path: string;
  meta?: { idempotent?: boolean };
  next: (opts?: { ctx: Observed & Pick<Scope, "outcomes"> }) => Promise<R>;
};

/**
 * The outermost middleware of every procedure. An idempotent one gets the
 * request's scope in its context, where its key's events (`observedSink`)
 * and the hooks around the key find it.
 *
 * Only a recorded trace is made the active context here. An unrecorded one
 * (sampled out) still has its span, for the outcome and the trace id the
 * handler passes on to the provider (`observeHandler`), but a replay never
 * enters OpenTelemetry's context: on Node.js 20 a context switch costs a
 * few microseconds and the cheapest request the app answers has few of them
 * to spare.
 */
export function observeProcedure<R extends Result>(opts: ProcedureOptions<R>): Promise<R> {
  // Off, no scope is opened: the acquisition and handler hooks below find none and do nothing either.
  if (!observing()) return opts.next();
  const active = context.active();
  // Under a parent that is not recorded (the HTTP request's span, a caller's `traceparent`, sampled out) the
  // sampler, which follows the parent, would make this span unrecorded as well: the parent's stands in for it.
  const parent = trace.getSpan(active);
  const sampledOut = parent !== undefined && !parent.isRecording() && (parent.spanContext().traceFlags & TraceFlags.SAMPLED) === 0;
  const span = sampledOut
    ? parent
    : tracer().startSpan(`trpc ${opts.path}`, { attributes: { [ATTR_RPC_SYSTEM]: "trpc", [ATTR_RPC_METHOD]: opts.path } }, active);
  const call = new ObservedCall(opts, span);
  return call.scope.recording ? context.with(trace.setSpan(active, span), call.run, call) : call.run();
}

/** One procedure call under observation: its scope, and how it is counted when it answers. */
class ObservedCall<R extends Result> {
  readonly scope: Scope;
  private readonly started = performance.now();

  constructor(
    private readonly opts: ProcedureOptions<R>,
    span: Span,
  ) {
    this.scope = { span, outcomes: [], recording: span.isRecording() };
  }

  async run(): Promise<R> {
    const { opts, scope } = this;
    const idempotent = opts.meta?.idempotent === true;
    try {
      const result = await (idempotent ? opts.next({ ctx: { [SCOPE]: scope, outcomes: scope.outcomes } }) : opts.next());
      if (!result.ok) scope.span.setStatus({ code: SpanStatusCode.ERROR, message: result.error.code });
      if (idempotent) this.count(result);
      return result;
    } finally {
      if (idempotent) opts.ctx.outcomes.push(...scope.outcomes);
      endAcquisition(scope);
      scope.handler?.end();
      scope.span.end();
    }
  }

  private count(result: R): void {
    const outcome = outcomeLabel(this.scope.outcomes.at(-1), result);
    if (!outcome) return;
    const m = metrics();
    const labels = { procedure: this.opts.path, outcome };
    m.requests.inc(labels);
    m.requestDuration.observe(labels, (performance.now() - this.started) / 1000);
    this.scope.span.setAttribute("idempotency.outcome", outcome);
  }
}

/** The acquisition's span, started when first needed, with the acquisition's start time. */
const acquisition = (scope: Scope, from: number): Span =>
  (scope.acquire ??= tracer().startSpan("idempotency.acquire", { startTime: from }));

/** Ends the acquisition: with its span, unless it was a replay answered at once. */
function endAcquisition(scope: Scope): void {
  const from = scope.acquireFrom;
  if (from === undefined) return;
  const replayedAtOnce = !scope.acquire && scope.outcomes.at(-1)?.decision === "replayed";
  if (!replayedAtOnce) acquisition(scope, from).end();
  scope.acquire = undefined;
  scope.acquireFrom = undefined;
}

/**
 * Around the idempotency middleware's whole work (its runtime's `around.call`): the acquisition starts here.
 * Unrecorded, the call's own promise goes back as it is: an async function returning it would add a promise
 * and its resolution's turns to every request.
 */
export function observeAcquisition<R>(request: object, run: () => Promise<R>): Promise<R> {
  const scope = (request as Observed)[SCOPE];
  return scope?.recording ? acquiring(scope, run) : run();
}

async function acquiring<R>(scope: Scope, run: () => Promise<R>): Promise<R> {
  scope.acquireFrom = performance.now();
  try {
    return await run();
  } finally {
    // A replay or a refusal: the key was never taken, the acquisition ends with the answer.
    endAcquisition(scope);
  }
}

/**
 * Around the handler's run (the runtime's `around.handler`): the key is this request's, the handler runs (its
 * provider calls under its span). Unrecorded, like `observeAcquisition`, it returns the run's own promise.
 */
export function observeHandler<R>(request: object, run: () => Promise<R>): Promise<R> {
  const scope = (request as Observed)[SCOPE];
  if (!scope) return run();
  // Without tracing (no exporter) the span is a stand-in with no trace in it: nothing to carry, no context to enter.
  if (!isSpanContextValid(scope.span.spanContext())) return run();
  // Unrecorded: the provider calls still carry the trace (not sampled), so the provider records none of it either.
  if (!scope.recording) {
    const active = context.active();
    // Under an unrecorded parent (an HTTP request's span) that span is the procedure's and already active.
    return trace.getSpan(active) === scope.span ? run() : context.with(trace.setSpan(active, scope.span), run);
  }
  return handling(scope, run);
}

async function handling<R>(scope: Scope, run: () => Promise<R>): Promise<R> {
  endAcquisition(scope);
  const span = tracer().startSpan("idempotency.handler");
  scope.handler = span;
  try {
    return await context.with(trace.setSpan(context.active(), span), run);
  } finally {
    span.end();
    scope.handler = undefined;
  }
}

/** The app's event sink, and each event of an observed request filed under its scope (`fileEvent`). */
export function observedSink(sink: IdempotencyEventSink | undefined): IdempotencyEventSink {
  return (event, request) => {
    sink?.(event, request);
    const scope = (request as Observed | undefined)?.[SCOPE];
    if (scope) fileEvent(scope, event);
  };
}

/** An event of the request's key: it joins the request's spans. */
function fileEvent(scope: Scope, event: IdempotencyEvent): void {
  if (!scope.recording) return;
  // During the acquisition its span (but a replay answered at once: the procedure's); after the handler
  // (completed, released) the event belongs to the procedure's own span.
  const from = scope.acquireFrom;
  const span =
    scope.handler ?? (from !== undefined && (scope.acquire || event.type !== E.Replayed) ? acquisition(scope, from) : scope.span);
  const attributes: Record<string, string | number> = {};
  if (event.fence !== undefined) attributes["idempotency.fence"] = event.fence;
  if (event.status !== undefined) attributes["idempotency.status"] = event.status;
  if (event.waitedMs !== undefined) attributes["idempotency.waited_ms"] = event.waitedMs;
  if (event.recoveryPoint !== undefined) attributes["idempotency.recovery_point"] = event.recoveryPoint;
  span.addEvent(`idempotency.${event.type}`, attributes);
  const decision = DECISION[event.type];
  if (decision && span !== scope.handler) span.setAttributes({ "idempotency.decision": decision, ...attributes });
}
