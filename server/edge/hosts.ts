/**
 * The Host allow-list, shared by the app (proxy.ts) and the provider
 * stand-in. A browser sends the name it resolved in `Host`; a page that
 * rebinds its own name to 127.0.0.1 (DNS rebinding) still sends its own
 * name, so answering only loopback names and the names a deployment lists
 * keeps such a page from reading or driving a server on this machine.
 * Pure: each caller passes its own configured names.
 */

/**
 * The name in a Host header, lowercased, without its port (IPv6 keeps its
 * brackets); undefined unless the whole value is one host and an optional
 * port (RFC 9110 §7.2): a value that only starts like a loopback name
 * (`[::1]evil`, `127.0.0.1:3000 evil`, `localhost:3000,evil`) names nothing.
 */
function hostName(host: string): string | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?)(?::(\d{1,5}))?$/.exec(host.trim().toLowerCase());
  if (!match) return undefined;
  const port = match[2];
  if (port !== undefined && Number(port) > 65535) return undefined;
  return match[1]!.replace(/\.$/, "");
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
  return name !== undefined && (isLoopbackName(name) || allowed.includes(name));
}
