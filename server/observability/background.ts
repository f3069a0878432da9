/**
 * The work no client waits for: each completer run on a key is a span (a
 * trace of its own, the procedure it runs again nested in it) and is counted
 * by what came of it; the expiry sweep counts the keys it deleted.
 */
import { SpanStatusCode } from "@opentelemetry/api";
import { metrics } from "./metrics";
import { tracer } from "./tracing";

/** `outcome` is the completer's closed set (completed, not_ours, retry_later, needs_attention); a throw counts as "error". */
export function observeCompleterRun<T extends { outcome: string }>(procedure: string, run: () => Promise<T>): Promise<T> {
  return tracer().startActiveSpan("completer.run", { root: true, attributes: { "idempotency.procedure": procedure } }, async (span) => {
    let result = "error";
    try {
      const done = await run();
      result = done.outcome;
      return done;
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : "error" });
      throw error;
    } finally {
      span.setAttribute("completer.result", result);
      span.end();
      metrics().completerRuns.inc({ result });
    }
  });
}

export function countExpiredDeleted(deleted: number): void {
  metrics().expiredDeleted.inc(deleted);
}
