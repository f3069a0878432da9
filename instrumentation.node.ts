/**
 * Node-only start-up, behind one guard: anything that fails, an invalid
 * environment while loading included, ends the process with one line
 * ("Cannot start: ...") and a non-zero code. A server that cannot start must
 * not stay up answering 500. The start-up itself is `server/startup.ts`.
 */
function cannotStart(error: unknown): never {
  process.stderr.write(`Cannot start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

export async function start(): Promise<void> {
  try {
    // Tracing first, so the start-up's own work and every request after it are traced (OTEL_EXPORTER_OTLP_ENDPOINT; off unset).
    const [{ env }, { startObservability }] = await Promise.all([import("./server/env"), import("./server/observability")]);
    startObservability({
      serviceName: "exactly-once",
      otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
      sampleRatio: env.OTEL_TRACES_SAMPLER_ARG,
      traceCallers: env.TRUST_TRACEPARENT,
    });
    const { startServer } = await import("./server/startup");
    startServer(cannotStart);
  } catch (error) {
    cannotStart(error);
  }
}
