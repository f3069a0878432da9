/**
 * A trace sampled out where it starts stays out everywhere. A payment made
 * in-process (a server component, the completer: no HTTP span above it)
 * whose procedure span is not recorded never makes that span the active
 * context for a replay; its handler does, so the provider call carries the
 * trace, not sampled, and neither the app nor the stand-in records any of
 * it. Were the provider call to start a trace of its own, the sampler here
 * (which records every root span but a procedure's) would record it.
 */
import { trace, SamplingDecision, TraceFlags, type Sampler } from "@opentelemetry/api";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { describe, expect, it } from "vitest";
import { tracer } from "../../server/observability/tracing";
import { newKey, newTenant } from "../support/api";
import { chargeListSchema } from "../../server/psp/schemas";
import { PAYMENT } from "../payments/support";
import { standInInThisProcess } from "./stand-in";

/** Follows the parent's decision; of the roots, records all but a tRPC procedure's. */
const everyRootButProcedures: Sampler = {
  shouldSample: (parentContext, _traceId, spanName) => {
    const parent = trace.getSpanContext(parentContext);
    if (parent)
      return { decision: parent.traceFlags & TraceFlags.SAMPLED ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD };
    return { decision: spanName.startsWith("trpc ") ? SamplingDecision.NOT_RECORD : SamplingDecision.RECORD_AND_SAMPLED };
  },
  toString: () => "everyRootButProcedures",
};

const exporter = new InMemorySpanExporter();
new NodeTracerProvider({ sampler: everyRootButProcedures, spanProcessors: [new SimpleSpanProcessor(exporter)] }).register();

const { url: standInUrl, app: traced } = standInInThisProcess({ slowMs: 0 });

describe("a trace sampled out at the procedure", () => {
  it("the sampler records a root span that is not a procedure's (the control)", () => {
    exporter.reset();
    tracer().startSpan("psp charge").end();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(["psp charge"]);
  });

  it("an in-process payment and its replay: the provider is charged once, and no span of either process is recorded", async () => {
    const tenant = await newTenant("sampled-out");
    const key = newKey("sampled-out");
    exporter.reset();
    const ids: string[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
      const caller = traced().createCaller(await traced().createContextInner({ tenant, headers: new Headers({ "Idempotency-Key": key }) }));
      ids.push((await caller.payments.create({ ...PAYMENT })).id);
    }
    expect(ids[1]).toBe(ids[0]);
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual([]);
    // Listing the charges is a root span of the stand-in's own, recorded: looked at last.
    const listed = chargeListSchema.parse(await (await fetch(`${standInUrl()}/charges`)).json()).data;
    expect(listed.filter((c) => c.reference === ids[0])).toHaveLength(1);
  });
});
