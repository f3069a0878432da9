import { database } from "@/db/client";

export const dynamic = "force-dynamic";

/** Liveness and database reachability; no authentication. */
export async function GET() {
  try {
    await database().sql`select 1`;
    return Response.json({ status: "ok", database: "up" }, { headers: { "cache-control": "no-store" } });
  } catch {
    return Response.json({ status: "degraded", database: "down" }, { status: 503, headers: { "cache-control": "no-store" } });
  }
}
