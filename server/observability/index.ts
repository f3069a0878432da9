/**
 * Metrics and traces, as one plug-in: every hook the app needs, gathered in
 * `instrument`, each fitted to a port the core already has (the
 * middleware's `onEvent`, the provider client's transport, the completer's
 * loop, the sweep, a route handler). The procedure builders (server/trpc.ts,
 * with the app's one `initTRPC`), the composition root and the route
 * handlers apply them; nothing on the money path names a metric or a span.
 */
import type { IdempotencyRuntime } from "@exactly-once/trpc";
import { countExpiredDeleted, observeCompleterRun } from "./background";
import { startHealthWindow } from "./health";
import { observeHttp } from "./http";
import { countFromZero, observeAcquisition, observeHandler, observedSink, observeProcedure } from "./procedure";
import { observedProviderFetch } from "./psp";
import { recordedTraceId, startTracing } from "./tracing";
import { setTraceCallers } from "./trace-callers";
import type { TraceCallers } from "../env-schema";

export const instrument = {
  /**
   * The app's idempotency runtime: each request's key events also reach its metrics and spans (the scope
   * `procedure` placed), the acquisition and the handler get their spans, the key row gets the recorded trace.
   */
  runtime<TTx>(runtime: IdempotencyRuntime<TTx>): IdempotencyRuntime<TTx> {
    return {
      ...runtime,
      onEvent: observedSink(runtime.onEvent),
      around: { call: observeAcquisition, handler: observeHandler },
      traceId: recordedTraceId,
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
export function startObservability(options: {
  serviceName: string;
  otlpEndpoint?: string;
  sampleRatio?: number;
  traceCallers: TraceCallers;
}): boolean {
  startHealthWindow();
  setTraceCallers(options.traceCallers);
  return startTracing({ serviceName: options.serviceName, endpoint: options.otlpEndpoint, sampleRatio: options.sampleRatio });
}
