/**
 * Metrics and traces, as one plug-in: every hook the app needs, gathered in
 * `instrument`, each fitted to a port the core already has (the
 * middleware's `onEvent`, the provider client's transport, the completer's
 * loop, the sweep, a route handler). The procedure builders (server/trpc.ts),
 * the composition root and the route handlers apply them;
 * nothing on the money path names a metric or a span.
 */
import { initTRPC } from "@trpc/server";
import type { IdempotencyRuntime } from "@exactly-once/trpc";
import { countExpiredDeleted, observeCompleterRun } from "./background";
import { startHealthWindow } from "./health";
import { observeHttp } from "./http";
import { countFromZero, observeAcquisition, observeHandler, observedSink, observeProcedure } from "./procedure";
import { observedProviderFetch } from "./psp";
import { recordedTraceId, startTracing } from "./tracing";
import { setTraceCallers } from "./trace-callers";
import type { TraceCallers } from "../env";

const t = initTRPC.create();

/** Places the acquisition's and the handler's spans around an idempotency builder (`.concat()`-able, like the builder itself). */
function aroundKey<B>(builder: B): B {
  return t.procedure.use(observeAcquisition).concat(builder as never).use(observeHandler) as B;
}

export const instrument = {
  /** The app's idempotency runtime: each request's key events also reach its metrics and spans (the scope `procedure` placed), the key row gets the recorded trace. */
  runtime<TTx>(runtime: IdempotencyRuntime<TTx>): IdempotencyRuntime<TTx> {
    return { ...runtime, onEvent: observedSink(runtime.onEvent), traceId: recordedTraceId };
  },
  /** The idempotency procedure builders, with the acquisition and handler spans. */
  procedures<P extends { atomic: (...args: never[]) => unknown; recoverable: (...args: never[]) => unknown }>(procedures: P): P {
    return {
      ...procedures,
      atomic: (...args: Parameters<P["atomic"]>) => aroundKey(procedures.atomic(...args)),
      recoverable: (...args: Parameters<P["recoverable"]>) => aroundKey(procedures.recoverable(...args)),
    };
  },
  /** The outermost middleware of every procedure: its span and, for an idempotent one, its outcome. */
  procedure: observeProcedure,
  providerFetch: observedProviderFetch,
  completerRun: observeCompleterRun,
  expiredDeleted: countExpiredDeleted,
  http: observeHttp,
  /** The idempotent procedures: each outcome's series is exported from the start, at 0, so a rate sees its first request. */
  knownProcedures: countFromZero,
  /** The recorded trace the current work belongs to, for the key's event log. */
  traceId: recordedTraceId,
};

/** Tracing for this process when an OTLP endpoint is configured, and the dashboard's five-minute window of the counters. */
export function startObservability(options: { serviceName: string; otlpEndpoint?: string; sampleRatio?: number; traceCallers: TraceCallers }): boolean {
  startHealthWindow();
  setTraceCallers(options.traceCallers);
  return startTracing({ serviceName: options.serviceName, endpoint: options.otlpEndpoint, sampleRatio: options.sampleRatio });
}
