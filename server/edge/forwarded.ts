/**
 * Who the client is, decided once per request at the socket, by TRUST_PROXY.
 *
 * Next.js fills `X-Forwarded-For` and `X-Forwarded-Host` only when a request
 * has none, so a client talking to the server directly could name its own
 * address (and so pick its own sign-in bucket) and its own host (and so pass
 * the same-origin check). Before Next.js sees a request, this rewrites both:
 * `X-Forwarded-For` becomes the one client address TRUST_PROXY resolves,
 * and `X-Forwarded-Host`/`-Proto` survive only from a trusted proxy (Next.js
 * then puts the real Host there). Everything downstream reads the first
 * `X-Forwarded-For` value and can believe it.
 */
import http from "node:http";
import type { TrustProxy } from "../env";

/** The client address: the peer itself unless it is a trusted proxy, then the hop before it, and so on. */
export function resolveClient(peer: string, forwardedFor: string | undefined, trust: TrustProxy): { client: string; viaTrustedProxy: boolean } {
  const chain = [...(forwardedFor ?? "").split(",").map((hop) => hop.trim()).filter(Boolean), peer];
  if ("hops" in trust) {
    if (trust.hops === 0) return { client: peer, viaTrustedProxy: false };
    return { client: chain[Math.max(0, chain.length - 1 - trust.hops)]!, viaTrustedProxy: true };
  }
  const trusted = (address: string) => trust.addresses.includes(address.replace(/^::ffff:/, ""));
  let i = chain.length - 1;
  while (i > 0 && trusted(chain[i]!)) i--;
  return { client: chain[i]!, viaTrustedProxy: trusted(peer) };
}

function normalise(req: http.IncomingMessage, trust: TrustProxy): void {
  const header = req.headers["x-forwarded-for"];
  const forwardedFor = Array.isArray(header) ? header.join(",") : header;
  const { client, viaTrustedProxy } = resolveClient(req.socket.remoteAddress ?? "unknown", forwardedFor, trust);
  req.headers["x-forwarded-for"] = client;
  if (!viaTrustedProxy) {
    delete req.headers["x-forwarded-host"];
    delete req.headers["x-forwarded-proto"];
  }
}

const patched = globalThis as typeof globalThis & { __forwardingNormalised?: boolean };

/**
 * Rewrites the forwarding headers of every request this process's HTTP
 * servers receive. Next.js offers no hook before its own request handling,
 * so the server's `request` event is the one place that sees the socket.
 */
export function normaliseForwarding(trust: TrustProxy): void {
  if (patched.__forwardingNormalised) return;
  patched.__forwardingNormalised = true;
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]) {
    if (event === "request") normalise(args[0] as http.IncomingMessage, trust);
    return Reflect.apply(emit, this, [event, ...args]) as boolean;
  } as typeof emit;
}
