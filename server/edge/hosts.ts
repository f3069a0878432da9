/**
 * The Host allow-list, shared by the app (proxy.ts) and the provider
 * stand-in. A browser sends the name it resolved in `Host`; a page that
 * rebinds its own name to 127.0.0.1 (DNS rebinding) still sends its own
 * name, so answering only loopback names and the names a deployment lists
 * keeps such a page from reading or driving a server on this machine.
 * Pure: each caller passes its own configured names.
 */

/** The name in a Host header, lowercased, without its port (IPv6 keeps its brackets). */
function hostName(host: string): string {
  const value = host.trim().toLowerCase();
  if (value.startsWith("[")) return value.slice(0, value.indexOf("]") + 1);
  const colon = value.lastIndexOf(":");
  return colon === -1 ? value : value.slice(0, colon);
}

const isLoopbackName = (name: string) =>
  name === "localhost" || name.endsWith(".localhost") || name === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);

/**
 * Whether a request naming `host` is for this server. No Host at all passes:
 * every browser sends one, so its absence is a non-browser client (HAProxy's
 * HTTP/1.0 health check), which DNS rebinding cannot use.
 */
export function hostAllowed(host: string | null | undefined, allowed: readonly string[]): boolean {
  if (host === null || host === undefined) return true;
  const name = hostName(host);
  return isLoopbackName(name) || allowed.includes(name);
}
