/**
 * The HTTP edge of a route handler: a server span per request (under
 * Next.js's own request span when Next.js traces; continuing a caller's
 * `traceparent` only when TRUST_TRACEPARENT believes that caller) and `http_server_request_duration_seconds` by method,
 * route and status, as OpenTelemetry's HTTP semantic conventions name them.
 * The route is the handler's file route, never the path a client sent.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type TextMapGetter } from "@opentelemetry/api";
import { ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE } from "@opentelemetry/semantic-conventions";
import { metrics } from "./metrics";
import { observing } from "./switch";
import { continuesCallerTrace, traceCallers } from "./trace-callers";
import { tracer } from "./tracing";
import { clientAddress } from "../edge/client-address";

const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

const fromHeaders: TextMapGetter<Headers> = {
  get: (carrier, key) => carrier.get(key) ?? undefined,
  keys: (carrier) => [...carrier.keys()],
};

export function observeHttp(route: string, handler: (req: Request) => Promise<Response>): (req: Request) => Promise<Response> {
  return (req) => {
    if (!observing()) return handler(req);
    // Semantic conventions: a method outside the known set is "_OTHER", so a client cannot mint label values.
    const method = KNOWN_METHODS.has(req.method) ? req.method : "_OTHER";
    const parent =
      trace.getActiveSpan() || !continuesCallerTrace(traceCallers(), clientAddress(req.headers))
        ? context.active()
        : propagation.extract(context.active(), req.headers, fromHeaders);
    const attributes = { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_HTTP_ROUTE]: route };
    return tracer().startActiveSpan(`${method} ${route}`, { kind: SpanKind.SERVER, attributes }, parent, async (span) => {
      const started = performance.now();
      let status = 500;
      try {
        const response = await handler(req);
        status = response.status;
        return response;
      } finally {
        span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
        metrics().httpDuration.observe(
          { http_request_method: method, http_route: route, http_response_status_code: String(status) },
          (performance.now() - started) / 1000,
        );
      }
    });
  };
}
