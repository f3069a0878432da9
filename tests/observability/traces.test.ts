/**
 * One payment is one trace across services: with the client trusted
 * (TRUST_TRACEPARENT names it; nobody is by default, see caller-trace.test.ts),
 * the client's `traceparent` is continued by the
 * app's HTTP span, the tRPC procedure, the key's acquisition and the
 * handler, the provider call, and the provider stand-in, which reads the
 * `traceparent` the app sent. The spans land in an in-memory exporter; the
 * stand-in runs in this process so its spans land there too (over a real
 * HTTP hop). A replay answered at once is the procedure's span alone; a
 * duplicate that waited keeps its acquisition's span.
 */
import { SpanKind } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-node";
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { getKey } from "../../server/admin/get.handler";
import { app } from "../../server/app";
import { traceFields } from "../../server/observability/log";
import { startTracing, tracer } from "../../server/observability/tracing";
import { setTraceCallers } from "../../server/observability/trace-callers";
import { newKey, newTenant, type Tenant } from "../support/api";
import { abandonedPayment, PAYMENT } from "../payments/support";
import { standInInThisProcess } from "./stand-in";

const exporter = new InMemorySpanExporter();
startTracing({ serviceName: "exactly-once-test", exporter });
// The client here is one of the deployment's own services.
setTraceCallers("all");

const { app: traced } = standInInThisProcess({ slowMs: 50 });

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";

function one(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  expect(
    found.map((s) => s.name),
    `spans named ${name} among ${spans.map((s) => s.name).join(", ")}`,
  ).toEqual([name]);
  return found[0]!;
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

/** A payment whose client sent `traceparent` with the given flags (01: recorded, 00: not). */
async function tracedPayment(
  tenant: Tenant,
  key: string,
  traceId: string,
  flags: "01" | "00",
  body: Record<string, unknown> = PAYMENT,
  status = 201,
) {
  const res = await traced().rest(
    new Request("http://test/api/v1/payments", {
      method: "POST",
      headers: {
        authorization: `Bearer ${tenant.token}`,
        "content-type": "application/json",
        "idempotency-key": key,
        traceparent: `00-${traceId}-${CLIENT_SPAN}-${flags}`,
      },
      body: JSON.stringify(body),
    }),
  );
  expect(res.status, await res.text()).toBe(status);
}

/** The key's timeline as the admin's key page shows it: each line's type and trace. */
async function timelineOf(tenant: Tenant, key: string) {
  await app.eventLog.flush();
  const { timeline } = await getKey({ sql: database().sql, psp: traced().paymentProvider() }, { tenantId: tenant.id, key });
  return timeline.map((e) => ({ type: e.type, traceId: e.traceId }));
}

describe("traces", () => {
  it("one payment: the app's spans and the stand-in's share the client's trace id, each under the one it came from", async () => {
    exporter.reset();
    const tenant = await newTenant("traces");
    await tracedPayment(tenant, newKey("traces"), TRACE_ID, "01");

    const spans = exporter.getFinishedSpans();
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([TRACE_ID]));
    const http = one(spans, "POST /api/[...rest]");
    const procedure = one(spans, "trpc payments.create");
    const acquire = one(spans, "idempotency.acquire");
    const handler = one(spans, "idempotency.handler");
    const call = one(spans, "psp charge");
    const provider = one(spans, "POST /charges");

    expect([http.kind, parentOf(http), http.attributes["http.response.status_code"]]).toEqual([SpanKind.SERVER, CLIENT_SPAN, 201]);
    expect(parentOf(procedure)).toBe(http.spanContext().spanId);
    expect([parentOf(acquire), acquire.attributes["idempotency.decision"], acquire.attributes["idempotency.fence"]]).toEqual([
      procedure.spanContext().spanId,
      "claim",
      1,
    ]);
    expect(parentOf(handler)).toBe(procedure.spanContext().spanId);
    expect([call.kind, parentOf(call), call.attributes["http.response.status_code"]]).toEqual([
      SpanKind.CLIENT,
      handler.spanContext().spanId,
      201,
    ]);
    // The stand-in continued the trace from the traceparent the app sent it.
    expect([provider.kind, parentOf(provider), provider.attributes["http.route"]]).toEqual([
      SpanKind.SERVER,
      call.spanContext().spanId,
      "/charges",
    ]);
    expect(procedure.attributes["idempotency.outcome"]).toBe("executed");
    // The handler's span carries the recovery points it committed (the payment's two phases), nothing of the key's acquisition.
    expect(handler.events.map((e) => e.name)).toEqual(["idempotency.phase_committed", "idempotency.phase_committed"]);
    expect(procedure.events.map((e) => e.name)).toContain("idempotency.completed");
  });

  it("a replay answered at once is one span: the procedure's, with the decision and the fence", async () => {
    const tenant = await newTenant("traces-replay");
    const key = newKey("traces-replay");
    await tracedPayment(tenant, key, TRACE_ID, "01");
    exporter.reset();
    await tracedPayment(tenant, key, TRACE_ID, "01");
    const spans = exporter.getFinishedSpans();
    expect(spans.filter((s) => s.name.startsWith("idempotency.")).map((s) => s.name)).toEqual([]);
    const procedure = one(spans, "trpc payments.create");
    expect([
      procedure.attributes["idempotency.decision"],
      procedure.attributes["idempotency.fence"],
      procedure.attributes["idempotency.outcome"],
    ]).toEqual(["replay", 1, "replayed"]);
    expect(procedure.events.map((e) => e.name)).toEqual(["idempotency.replayed"]);
  });

  it("a duplicate that waited for the first attempt keeps its acquisition's span: the wait, then the replay", async () => {
    const tenant = await newTenant("traces-waited");
    const key = newKey("traces-waited");
    exporter.reset();
    // The provider answers acct_test_slow after 1.5 s: the duplicate, sent once the key is claimed, finds it held and waits.
    const slow = { ...PAYMENT, destination: "acct_test_slow" };
    const first = tracedPayment(tenant, key, TRACE_ID, "01", slow);
    while ((await database().sql`select 1 from idempotency_keys where tenant_id = ${tenant.id} and key = ${key}`).length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await Promise.all([first, tracedPayment(tenant, key, TRACE_ID, "01", slow)]);
    const spans = exporter.getFinishedSpans();
    const waited = spans.find((s) => s.name === "trpc payments.create" && s.attributes["idempotency.outcome"] === "waited");
    expect(waited, "the duplicate's procedure span").toBeDefined();
    const acquisitions = spans.filter((s) => s.name === "idempotency.acquire" && parentOf(s) === waited!.spanContext().spanId);
    expect(acquisitions.map((s) => [s.attributes["idempotency.decision"], s.events.map((e) => e.name)])).toEqual([
      ["replay", ["idempotency.waited", "idempotency.replayed"]],
    ]);
  });

  it("the key's page names the trace of the request that ran the key, and of a mismatching reuse", async () => {
    const tenant = await newTenant("traces-key-page");
    const key = newKey("traces-key-page");
    const ran = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
    const reused = "b1b2c3d4e5f60718293a4b5c6d7e8f91";
    await tracedPayment(tenant, key, ran, "01");
    await tracedPayment(tenant, key, reused, "01", { ...PAYMENT, amount: "1.23" }, 422);
    expect(await timelineOf(tenant, key)).toEqual([
      { type: "claimed", traceId: ran },
      { type: "completed", traceId: null },
      { type: "mismatch", traceId: reused },
    ]);
  });

  it("a trace the client did not record: no span anywhere, no trace id on the key's page, and no extra event", async () => {
    const tenant = await newTenant("traces-unsampled");
    const key = newKey("traces-unsampled");
    exporter.reset();
    await tracedPayment(tenant, key, "0f1e2d3c4b5a69788796a5b4c3d2e1f0", "00");
    // Neither the app nor the stand-in records any of it, nor starts a trace of its own.
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual([]);
    expect(await timelineOf(tenant, key)).toEqual([
      { type: "claimed", traceId: null },
      { type: "completed", traceId: null },
    ]);
    const [row] = await database().sql<{ n: number }[]>`select count(*)::int as n from idempotency_events where tenant_id = ${tenant.id}`;
    expect(row?.n).toBe(0);
  });

  it("a completer run is a trace of its own, the procedure it runs again nested in it", async () => {
    const tenant = await newTenant("traces-completer");
    const key = newKey("traces-completer");
    await abandonedPayment(tenant, key, PAYMENT);
    exporter.reset();
    expect(
      (await traced().completer.completeDueKeys({ tenantId: tenant.id, backoffMs: 20, maxBackoffMs: 100 })).map((r) => r.outcome),
    ).toEqual(["completed"]);
    const spans = exporter.getFinishedSpans();
    const run = one(spans, "completer.run");
    expect([parentOf(run), run.attributes["completer.result"]]).toEqual([undefined, "completed"]);
    const procedure = one(spans, "trpc payments.create");
    expect([parentOf(procedure), procedure.attributes["idempotency.outcome"]]).toEqual([run.spanContext().spanId, "takeover"]);
    expect(one(spans, "idempotency.acquire").attributes["idempotency.decision"]).toBe("takeover");
    expect(parentOf(one(spans, "POST /charges"))).toBe(one(spans, "psp charge").spanContext().spanId);
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
  });

  it("a log line written inside a span carries its trace id", () => {
    expect(traceFields()).toEqual({});
    tracer().startActiveSpan("log-line", (span) => {
      expect(traceFields()).toEqual({ traceId: span.spanContext().traceId, spanId: span.spanContext().spanId });
      span.end();
    });
  });
});
