/**
 * Traces are ours to decide. By default (TRUST_TRACEPARENT unset) a client's
 * `traceparent` is not continued: at sampling ratio 0 a client that marks its
 * trace as recorded still gets nothing recorded or exported, and its trace id
 * never lands on a key an operator reads. Whatever the setting, the payment
 * provider receives our `traceparent` and nothing else: no caller's
 * `tracestate`, no baggage.
 */
import { context, propagation, trace } from "@opentelemetry/api";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-node";
import { afterEach, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { observedProviderFetch } from "../../server/observability/psp";
import { setTraceCallers } from "../../server/observability/trace-callers";
import { startTracing } from "../../server/observability/tracing";
import { PAYMENT } from "../payments/support";
import { newKey, newTenant } from "../support/api";
import { standInInThisProcess } from "./stand-in";

const exporter = new InMemorySpanExporter();
startTracing({ serviceName: "exactly-once-test", exporter, sampleRatio: 0 });
const { app: traced } = standInInThisProcess({ slowMs: 50 });
afterEach(() => setTraceCallers("none"));

const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_PARENT = `00-${CLIENT_TRACE}-00f067aa0ba902b7-01`;

async function payWithClientTrace(label: string) {
  const tenant = await newTenant(label);
  const key = newKey(label);
  const res = await traced().rest(
    new Request("http://test/api/v1/payments", {
      method: "POST",
      headers: {
        authorization: `Bearer ${tenant.token}`,
        "content-type": "application/json",
        "idempotency-key": key,
        traceparent: CLIENT_PARENT,
        tracestate: "vendor=x",
      },
      body: JSON.stringify(PAYMENT),
    }),
  );
  expect(res.status, await res.text()).toBe(201);
  const [row] = await database().sql<
    { trace_id: string | null }[]
  >`select trace_id from idempotency_keys where tenant_id = ${tenant.id} and key = ${key}`;
  return row!.trace_id;
}

describe("a client's traceparent", () => {
  it("by default, cannot force a recording at ratio 0 nor name the trace on the key", async () => {
    exporter.reset();
    expect(await payWithClientTrace("caller-trace-default")).toBeNull();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual([]);
  });

  it("from a trusted caller, is continued: recorded as the caller asked, its trace id on the key", async () => {
    setTraceCallers("all");
    exporter.reset();
    expect(await payWithClientTrace("caller-trace-trusted")).toBe(CLIENT_TRACE);
    const traces = new Set(exporter.getFinishedSpans().map((s) => s.spanContext().traceId));
    expect(traces).toEqual(new Set([CLIENT_TRACE]));
  });
});

describe("a provider call", () => {
  it("carries our traceparent only: never a caller's tracestate or baggage", async () => {
    setTraceCallers("all");
    const sent: Record<string, string>[] = [];
    const transport = observedProviderFetch(async (_input, init) => {
      sent.push(Object.fromEntries(new Headers(init?.headers).entries()));
      return new Response("{}", { status: 201 });
    });
    // A context as a trusted caller's request leaves it: its trace (with tracestate) and baggage.
    const fromCaller = propagation.extract(context.active(), { traceparent: CLIENT_PARENT, tracestate: "vendor=secret" });
    const withBaggage = propagation.setBaggage(fromCaller, propagation.createBaggage({ user: { value: "alice" } }));
    expect(trace.getSpanContext(withBaggage)?.traceState?.serialize()).toBe("vendor=secret");
    await context.with(withBaggage, () => transport("http://psp.test/charges", { method: "POST", headers: { "idempotency-key": "k" } }));
    expect(Object.keys(sent[0]!).sort()).toEqual(["idempotency-key", "traceparent"]);
    expect(sent[0]!.traceparent).toMatch(new RegExp(`^00-${CLIENT_TRACE}-[0-9a-f]{16}-01$`));
  });
});
