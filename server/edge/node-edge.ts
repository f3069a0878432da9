/**
 * The app's HTTP edge below Next.js, on the app's own HTTP server
 * (server/serve.ts): the one place that sees the socket, before Next.js
 * handles anything.
 *
 * TRACE and TRACK get a 405 problem here: Next.js cannot build a fetch
 * Request for TRACE and would log each one as a crash with a 500; Node's
 * parser refuses TRACK with a bare 400.
 *
 * A path whose percent-escapes do not decode (`/api/%E0`, a stray `%`) is a
 * 400 problem here, for every route: Next.js decodes the path itself, and a
 * malformed escape in a dynamic route made it answer a bare text/plain 500,
 * unlogged and uncounted.
 *
 * Every answer the edge gives itself carries the app's security headers
 * (security-headers.ts, as Next.js sends them), is counted in
 * `http_server_refused_requests_total` by reason, and never reaches Next.js.
 *
 * More than one `Idempotency-Key` field is a 400 here: Node.js joins the
 * fields into one value (`k` and an empty one become `k,`), so past this
 * point one key and two keys can look alike.
 *
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
 *
 * A caller's trace fields (`traceparent`, `tracestate`, `baggage`) survive
 * only from a caller TRUST_TRACEPARENT names: Next.js continues whatever
 * trace a request carries, so a field that is not believed is removed here,
 * before it could force a recording or name the trace on a key.
 *
 * A client that stops sending a request body (an aborted upload) makes the
 * request emit `Error: aborted`; Next.js buffers bodies for the proxy and
 * rethrows that error, which it logs with its stack as if the server had
 * failed. The edge logs one debug line per aborted body instead, and
 * Next.js's report of that very error object is dropped (quietAbortReports).
 */
import http from "node:http";
import type { Duplex } from "node:stream";
import type { TraceCallers, TrustProxy } from "../env-schema";
import { IdempotencyKeyInvalidError } from "@exactly-once/trpc";
import { DomainError, malformedPathProblem, problemBody, publicProblem, type Problem } from "../errors";
import { logger } from "../logger";
import { EdgeRefusal, metrics } from "../observability/metrics";
import { observing } from "../observability/switch";
import { continuesCallerTrace, TRACE_HEADERS } from "../observability/trace-callers";
import { securityHeaders } from "./security-headers";

const REFUSED_METHODS = new Set(["TRACE", "TRACK"]);

const ALLOW = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS";
const methodProblem = (method: string) => publicProblem(new DomainError("method-not-allowed", 405, `${method} is not served here.`));

// serve.ts sets NODE_ENV before it loads this module, as it does before Next.js.
const SECURITY_HEADERS = Object.fromEntries(
  securityHeaders(process.env.NODE_ENV === "development").map(({ key, value }) => [key.toLowerCase(), value]),
);

/** How much of a refused path a log line keeps: enough to recognise a probe, never a client's whole request line. */
const LOGGED_PATH_CHARS = 100;

function count(reason: EdgeRefusal): void {
  if (observing()) metrics().edgeRefused.inc({ reason });
}

/** The edge's own answer: a problem with the app's security headers, counted; the request's body, if any, is drained unread. */
function refuse(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  reason: EdgeRefusal,
  problem: Problem,
  headers: Record<string, string> = {},
): true {
  const body = problemBody(problem);
  res
    .writeHead(problem.status, {
      ...SECURITY_HEADERS,
      "content-type": "application/problem+json",
      "cache-control": "no-store",
      "content-length": Buffer.byteLength(body),
      ...headers,
    })
    .end(body);
  req.resume();
  count(reason);
  return true;
}

/** Answers TRACE itself; true when it did. */
function refusedMethod(req: http.IncomingMessage, res: http.ServerResponse): boolean {
  const method = (req.method ?? "").toUpperCase();
  return REFUSED_METHODS.has(method) && refuse(req, res, EdgeRefusal.Method, methodProblem(method), { allow: ALLOW });
}

/** Whether every percent-escape of the path (the target before `?`) decodes to UTF-8, as Next.js will decode it. */
function pathDecodes(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/** Answers a request whose path does not decode itself; true when it did. */
function refusedPath(req: http.IncomingMessage, res: http.ServerResponse): boolean {
  const target = req.url ?? "/";
  const query = target.indexOf("?");
  const path = query === -1 ? target : target.slice(0, query);
  if (pathDecodes(path)) return false;
  // The query is left out (it may carry a token), and the path is cut: the line says what came, not all of it.
  logger.info(
    { method: req.method, path: path.slice(0, LOGGED_PATH_CHARS), pathLength: path.length },
    "refused a path whose percent-escapes do not decode",
  );
  return refuse(req, res, EdgeRefusal.MalformedPath, malformedPathProblem());
}

/** Answers a request with more than one Idempotency-Key field itself; true when it did. */
function refusedKeyFields(req: http.IncomingMessage, res: http.ServerResponse): boolean {
  if ((req.headersDistinct["idempotency-key"]?.length ?? 0) < 2) return false;
  const error = new IdempotencyKeyInvalidError(0, "must be sent once; this request has more than one Idempotency-Key field");
  return refuse(req, res, EdgeRefusal.KeyFields, publicProblem(error));
}

/**
 * A method Node's parser does not know (TRACK among them) never becomes a
 * request: it arrives as a `clientError`, answered here with the same 405
 * problem instead of Node's bare 400.
 */
function refusedUnknownMethod(error: NodeJS.ErrnoException, socket: Duplex): boolean {
  if (error.code !== "HPE_INVALID_METHOD" || !socket.writable) return false;
  const body = problemBody(methodProblem("This method"));
  const security = Object.entries(SECURITY_HEADERS)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  socket.end(
    `HTTP/1.1 405 Method Not Allowed\r\ncontent-type: application/problem+json\r\ncache-control: no-store\r\nallow: ${ALLOW}\r\n${security}` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  count(EdgeRefusal.Method);
  return true;
}

/** The client address: the peer itself unless it is a trusted proxy, then the hop before it, and so on. */
export function resolveClient(
  peer: string,
  forwardedFor: string | undefined,
  trust: TrustProxy,
): { client: string; viaTrustedProxy: boolean } {
  const chain = [
    ...(forwardedFor ?? "")
      .split(",")
      .map((hop) => hop.trim())
      .filter(Boolean),
    peer,
  ];
  if ("hops" in trust) {
    if (trust.hops === 0) return { client: peer, viaTrustedProxy: false };
    return { client: chain[Math.max(0, chain.length - 1 - trust.hops)]!, viaTrustedProxy: true };
  }
  const trusted = (address: string) => trust.addresses.includes(address.replace(/^::ffff:/, ""));
  let i = chain.length - 1;
  while (i > 0 && trusted(chain[i]!)) i--;
  return { client: chain[i]!, viaTrustedProxy: trusted(peer) };
}

/** The errors of request bodies their clients aborted, each logged once by the edge. */
const abortedBodies = new WeakSet<Error>();

/** Notes a request whose client stops sending its body: one debug line, no error. */
function watchAbort(req: http.IncomingMessage): void {
  req.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "ECONNRESET" || error.message !== "aborted") return;
    abortedBodies.add(error);
    const path = (req.url ?? "/").split("?", 1)[0]!;
    logger.debug({ method: req.method, path: path.slice(0, LOGGED_PATH_CHARS) }, "the client stopped sending the request body");
  });
}

let abortReportsQuiet = false;

/**
 * Next.js reports errors through console.error (the error alone, or after
 * its `⨯` prefix); a report whose error is an aborted body the edge already
 * logged is dropped, every other report passes untouched.
 */
function quietAbortReports(): void {
  if (abortReportsQuiet) return;
  abortReportsQuiet = true;
  /* eslint-disable no-console -- not a log of the app's: Next.js's own error reports, passed on or dropped */
  const report = console.error.bind(console);
  console.error = (...args: unknown[]) => {
    if (args.some((arg) => arg instanceof Error && abortedBodies.has(arg))) return;
    report(...args);
  };
  /* eslint-enable no-console */
}

/** Who is believed about what: TRUST_PROXY about the client and host, TRUST_TRACEPARENT about the trace. */
export type EdgeTrust = { proxy: TrustProxy; traceCallers: TraceCallers };

function normalise(req: http.IncomingMessage, trust: EdgeTrust): void {
  const header = req.headers["x-forwarded-for"];
  const forwardedFor = Array.isArray(header) ? header.join(",") : header;
  const { client, viaTrustedProxy } = resolveClient(req.socket.remoteAddress ?? "unknown", forwardedFor, trust.proxy);
  req.headers["x-forwarded-for"] = client;
  if (!viaTrustedProxy) {
    delete req.headers["x-forwarded-host"];
    delete req.headers["x-forwarded-proto"];
  }
  if (!continuesCallerTrace(trust.traceCallers, client)) for (const name of TRACE_HEADERS) delete req.headers[name];
}

/** Node's server, with the edge before anything of its own handling runs. */
class EdgeServer extends http.Server {
  constructor(private readonly trust: EdgeTrust) {
    super();
  }

  /**
   * The edge answers in `emit`, before any listener: a request it refuses
   * never reaches `handle`, and a `clientError` it does not answer returns
   * false, so Node answers it as it would without a listener (400, 431, 408).
   */
  override emit(event: string, ...args: unknown[]): boolean {
    if (event === "request") {
      const [req, res] = args as [http.IncomingMessage, http.ServerResponse];
      if (refusedMethod(req, res) || refusedPath(req, res) || refusedKeyFields(req, res)) return true;
      normalise(req, this.trust);
      watchAbort(req);
    }
    if (event === "clientError" && refusedUnknownMethod(args[0] as NodeJS.ErrnoException, args[1] as Duplex)) return true;
    return super.emit(event, ...args);
  }
}

/**
 * An HTTP server whose requests pass the edge before `handle` sees them.
 * Next.js offers no hook before its own request handling (proxy.ts gets
 * neither the socket nor a TRACE), so the app's own server (server/serve.ts)
 * owns the socket and hands Next.js what passed.
 */
export function createEdgeServer(trust: EdgeTrust, handle: http.RequestListener): http.Server {
  quietAbortReports();
  return new EdgeServer(trust).on("request", handle);
}
