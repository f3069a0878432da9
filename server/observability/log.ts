/** The active trace on every log line (pino's `mixin`): nothing when tracing is off or no span is active. */
import { isSpanContextValid, trace } from "@opentelemetry/api";

export function traceFields(): { traceId?: string; spanId?: string } {
  const span = trace.getActiveSpan()?.spanContext();
  return span && isSpanContextValid(span) ? { traceId: span.traceId, spanId: span.spanId } : {};
}
