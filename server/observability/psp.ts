/**
 * Both ends of a provider call. The app's side wraps the provider client's
 * transport (its `fetch` option): every attempt gets a client span under
 * the handler's span, carries that span's `traceparent`, and is counted by
 * operation and status. The stand-in's side continues the trace the request
 * carries, so one payment is one trace across both processes.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_FULL,
} from "@opentelemetry/semantic-conventions";
import { metrics } from "./metrics";
import { observing } from "./switch";
import { tracer } from "./tracing";

/** The provider's routes as fixed names: a label never carries a charge id or a key. */
const OPERATIONS: [method: string, pattern: RegExp, operation: string, route: string][] = [
  ["POST", /\/charges$/, "charge", "/charges"],
  ["POST", /\/charges\/[^/]+\/capture$/, "capture", "/charges/{id}/capture"],
  ["POST", /\/charges\/[^/]+\/void$/, "void", "/charges/{id}/void"],
  ["POST", /\/charges\/[^/]+\/refunds$/, "refund", "/charges/{id}/refunds"],
  ["GET", /\/keys\/[^/]+$/, "lookup_key", "/keys/{key}"],
  ["GET", /\/charges$/, "list_charges", "/charges"],
  ["GET", /\/charges\/[^/]+$/, "get_charge", "/charges/{id}"],
  ["POST", /\/webhooks\/send$/, "send_webhook", "/webhooks/send"],
  ["GET", /\/health$/, "health", "/health"],
];

function providerOperation(method: string, pathname: string): { operation: string; route: string } {
  const found = OPERATIONS.find(([m, pattern]) => m === method && pattern.test(pathname));
  return found ? { operation: found[2], route: found[3] } : { operation: "other", route: "other" };
}

/** The provider client's transport, observed. */
export function observedProviderFetch(inner: typeof fetch): typeof fetch {
  return (input, init) => {
    if (!observing()) return inner(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = (init?.method ?? "GET").toUpperCase();
    const { operation } = providerOperation(method, url.pathname);
    const attributes = { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_URL_FULL]: `${url.origin}${url.pathname}`, "psp.operation": operation };
    // Not made the active context: nothing runs under it but the request, which carries it in its headers.
    const parent = context.active();
    const span = tracer().startSpan(`psp ${operation}`, { kind: SpanKind.CLIENT, attributes }, parent);
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    // Only `traceparent` goes to the provider: a caller's `tracestate` (kept on a continued trace) is its vendors' business, not the provider's.
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(parent, span), carrier);
    if (carrier.traceparent) headers.traceparent = carrier.traceparent;
    return send(inner, input, { ...init, headers }, span, operation);
  };
}

async function send(
  inner: typeof fetch,
  input: Parameters<typeof fetch>[0],
  init: RequestInit,
  span: Span,
  operation: string,
): Promise<Response> {
  const started = performance.now();
  let status = 0;
  try {
    const response = await inner(input, init);
    status = response.status;
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    return response;
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : "error" });
    throw error;
  } finally {
    const m = metrics();
    m.pspRequests.inc({ operation, status: String(status) });
    m.pspDuration.observe({ operation, status: String(status) }, (performance.now() - started) / 1000);
    span.end();
  }
}

/** The stand-in's side: its handling of one request, as a server span in the caller's trace. */
export function continueProviderTrace<T extends { status: number }>(
  method: string,
  url: string,
  headers: Record<string, string | string[] | undefined>,
  handle: () => Promise<T>,
): Promise<T> {
  const { operation, route } = providerOperation(method, new URL(url, "http://stand-in").pathname);
  const parent = propagation.extract(context.active(), headers);
  const attributes = { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_HTTP_ROUTE]: route, "psp.operation": operation };
  return tracer().startActiveSpan(`${method} ${route}`, { kind: SpanKind.SERVER, attributes }, parent, async (span) => {
    try {
      const answer = await handle();
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, answer.status);
      if (answer.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      return answer;
    } finally {
      span.end();
    }
  });
}
