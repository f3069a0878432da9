/**
 * Who may read `/api/metrics`: a scraper on this machine (the client address
 * the HTTP edge resolved, server/edge/node-edge.ts, is loopback), or one that
 * presents METRICS_TOKEN as a bearer token. Anyone else is told there is
 * nothing here (404), as for any path that does not exist.
 */
import { timingSafeEqual } from "node:crypto";
import { clientAddress } from "../edge/client-address";
import { bearerToken } from "../tenants/tokens";

const isLoopbackAddress = (address: string) => address === "::1" || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address);

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function metricsAllowed(headers: Headers, token: string | undefined): boolean {
  if (isLoopbackAddress(clientAddress(headers))) return true;
  const given = bearerToken(headers);
  return token !== undefined && given !== undefined && sameSecret(given, token);
}
