import { database } from "@/db/client";
import { settings } from "@/server/app";
import { metricsAllowed } from "@/server/observability/access";
import { refreshKeyStates } from "@/server/observability/key-states";
import { metrics } from "@/server/observability/metrics";
import { problemOf } from "@/server/problems";
import { problemResponse } from "@/server/rest/respond";

export const dynamic = "force-dynamic";

/** Prometheus text format, for a scraper on loopback or one with METRICS_TOKEN; anyone else finds nothing here. */
export async function GET(req: Request): Promise<Response> {
  if (!metricsAllowed(req.headers, settings.METRICS_TOKEN)) {
    return problemResponse(problemOf("not-found", "No endpoint at GET /api/metrics."));
  }
  await refreshKeyStates(database());
  const { registry } = metrics();
  return new Response(await registry.metrics(), { headers: { "content-type": registry.contentType, "cache-control": "no-store" } });
}
