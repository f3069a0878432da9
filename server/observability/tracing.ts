/**
 * OpenTelemetry tracing for one process (the app, or the provider stand-in
 * in its own process). Off unless started: until a provider is registered,
 * the API's tracer hands out no-op spans, so the spans placed on the request
 * path cost next to nothing. `startTracing` registers a provider with W3C
 * `traceparent` propagation and the AsyncLocalStorage context manager, and
 * exports over OTLP/HTTP when an endpoint is given (OTEL_EXPORTER_OTLP_ENDPOINT);
 * in protobuf, OTLP's default encoding, which takes less CPU and fewer bytes
 * per span than JSON; tests pass an exporter of their own (in memory).
 */
import { trace, TraceFlags, type Tracer } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type SpanExporter,
} from "@opentelemetry/sdk-trace-node";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";

type TracingOptions = {
  serviceName: string;
  /** OTLP base URL (the collector's, as in OTEL_EXPORTER_OTLP_ENDPOINT): spans go to `<endpoint>/v1/traces`. */
  endpoint?: string;
  /** Spans go here, each as it ends (tests: an in-memory exporter). */
  exporter?: SpanExporter;
  /**
   * The share of new traces recorded (1: all). A trace continued from a
   * trusted caller (TRUST_TRACEPARENT) is recorded when the caller recorded
   * it (its `traceparent` flag), so one payment is always whole or absent
   * across the services and the provider.
   */
  sampleRatio?: number;
};

const holder = globalThis as { __eoTracing?: NodeTracerProvider };

/** Registers tracing once per process; false when neither an endpoint nor an exporter asks for it. */
export function startTracing(options: TracingOptions): boolean {
  if (holder.__eoTracing) return true;
  const processors = [
    ...(options.endpoint
      ? [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${options.endpoint.replace(/\/+$/, "")}/v1/traces` }))]
      : []),
    ...(options.exporter ? [new SimpleSpanProcessor(options.exporter)] : []),
  ];
  if (processors.length === 0) return false;
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampleRatio ?? 1) }),
    spanProcessors: processors,
  });
  // Trace context only: W3C Baggage is never read from a caller nor sent on (the default propagator does both).
  provider.register({ propagator: new W3CTraceContextPropagator() });
  holder.__eoTracing = provider;
  return true;
}

/** Sends what is still buffered (shutdown). */
export async function stopTracing(): Promise<void> {
  await holder.__eoTracing?.shutdown();
}

/**
 * One tracer for the process, taken once: the API hands out a proxy that
 * follows the provider once one is registered, so it need not be looked up
 * (a map keyed by name and version) for every span.
 */
const proxyTracer = trace.getTracer("exactly-once");

export const tracer = (): Tracer => proxyTracer;

/**
 * The trace the current work is recorded in, when it is: the id an operator
 * looks up in the tracing backend. Undefined with tracing off or the trace
 * not sampled (its id would lead nowhere).
 */
export function recordedTraceId(): string | undefined {
  const context = trace.getActiveSpan()?.spanContext();
  return context && (context.traceFlags & TraceFlags.SAMPLED) !== 0 ? context.traceId : undefined;
}
