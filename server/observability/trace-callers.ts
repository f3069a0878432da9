/**
 * Whose trace a request may continue. A caller's `traceparent` decides
 * whether its request is recorded (the sampled flag overrides our sampling
 * ratio) and which trace id lands on the key an operator reads in /admin, so
 * by default no caller's is believed: each request starts a trace of its own
 * under our sampler. A deployment whose callers are its own services names
 * them (TRUST_TRACEPARENT); their traces are then continued, one payment one
 * trace across every service.
 */

import type { TraceCallers } from "../env-schema";

/** The W3C Trace Context and Baggage fields a caller may send; what is not believed is dropped whole. */
export const TRACE_HEADERS = ["traceparent", "tracestate", "baggage"] as const;

/** `client`: the address the edge resolved (TRUST_PROXY), when known. */
export function continuesCallerTrace(callers: TraceCallers, client: string | undefined): boolean {
  if (callers === "none") return false;
  if (callers === "all") return true;
  return client !== undefined && callers.addresses.includes(client.replace(/^::ffff:/, ""));
}

const holder = globalThis as { __eoTraceCallers?: TraceCallers };

/** The process's setting, given once at start-up (Next.js may load this module more than once, hence globalThis). */
export function setTraceCallers(callers: TraceCallers): void {
  holder.__eoTraceCallers = callers;
}

export const traceCallers = (): TraceCallers => holder.__eoTraceCallers ?? "none";
