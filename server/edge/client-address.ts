/**
 * The client's address as the HTTP edge resolved it: server/edge/node-edge.ts leaves that one address in
 * X-Forwarded-For (a proxy's word is taken only under TRUST_PROXY). "unknown" where no edge ran (a server-side
 * caller). Bounded: rate limits key their counters by it.
 */
export const clientAddress = (headers: Headers): string =>
  (headers.get("x-forwarded-for")?.split(",")[0]?.trim() || "unknown").slice(0, 64);
