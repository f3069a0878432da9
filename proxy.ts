/**
 * The gate in front of every route (Next.js 16's proxy, on the Node.js
 * runtime, in the server's own process), in this order (TRACE, TRACK and a
 * path whose percent-escapes do not decode never get here:
 * server/edge/node-edge.ts answers them):
 * - a Host that is neither a loopback name nor in ALLOWED_HOSTS gets 421
 *   (DNS rebinding, see server/edge/hosts.ts);
 * - while the instance waits for its database at start-up, or has lost it,
 *   requests get a 503 problem with Retry-After at once instead of a 500 or
 *   a hang. The health endpoint passes through and tells which of the two it
 *   is; so do the metrics (db_up says it to Prometheus).
 */
import { NextResponse, type NextRequest } from "next/server";
import { availability, Phase, RETRY_AFTER_SECONDS } from "./db/availability";
import { hostAllowed } from "./server/edge/hosts";
import { env } from "./server/env";
import { databaseUnavailableProblem, DomainError, problemBody, publicProblem } from "./server/errors";
import { problemResponse } from "./server/rest/respond";

/** Paths that answer without the database (still behind the Host gate): `/_next/image` optimises the app's own images. */
const PASS_THROUGH = new Set(["/api/health", "/api/metrics", "/_next/image"]);

export function proxy(request: NextRequest) {
  if (!hostAllowed(request.headers.get("host"), env.ALLOWED_HOSTS)) {
    return problemResponse(publicProblem(new DomainError("misdirected-request", 421, "This server does not answer for that host name.")));
  }
  const { phase, databaseUp, detail } = availability();
  // Health and metrics answer while the database is away: that is when they matter.
  if ((phase === Phase.ready && databaseUp) || PASS_THROUGH.has(request.nextUrl.pathname)) return NextResponse.next();
  const problem = databaseUnavailableProblem(phase === Phase.starting ? `The service is starting (${detail}); retry shortly.` : undefined);
  return new NextResponse(problemBody(problem), {
    status: 503,
    headers: { "content-type": "application/problem+json", "retry-after": String(RETRY_AFTER_SECONDS), "cache-control": "no-store" },
  });
}

export const config = {
  // Built static files are the same for every Host and need no database; everything else,
  // /_next/image included (it fetches the app's own URLs for the caller), passes the Host gate.
  matcher: ["/((?!_next/static/).*)"],
};
