import { availability, Phase, RETRY_AFTER_SECONDS } from "@/db/availability";
import { database } from "@/db/client";
import type { Health } from "@/server/rest/health";

export const dynamic = "force-dynamic";

const HEALTH_TIMEOUT_MS = 2000;
const noStore = { "cache-control": "no-store" };
const retry = { ...noStore, "retry-after": String(RETRY_AFTER_SECONDS) };

/** Liveness and database reachability; no authentication. 503 while starting or while the database is away. */
export async function GET() {
  const { phase, detail } = availability();
  if (phase === Phase.starting)
    return Response.json({ status: "starting", detail: `starting: ${detail}` } satisfies Health, { status: 503, headers: retry });
  const answered = database().sql`select 1`.then(() => true).catch(() => false);
  const up = await Promise.race([answered, new Promise<boolean>((r) => setTimeout(r, HEALTH_TIMEOUT_MS, false))]);
  if (up) return Response.json({ status: "ok", database: "up" } satisfies Health, { headers: noStore });
  return Response.json({ status: "degraded", database: "down" } satisfies Health, { status: 503, headers: retry });
}
