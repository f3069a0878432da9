/**
 * Requests on connections of their own, so concurrent duplicates really
 * overlap: each request connects and sends its headers first, and its body
 * goes out on `release()`. Releasing many in one loop is the barrier: the
 * server sees every body within the same moment, on separate connections.
 * (node:http rather than fetch: fetch pools connections and sends a request
 * whole, so it can neither hold a body back nor promise one socket each.)
 */
import http from "node:http";
import https from "node:https";
import { performance } from "node:perf_hooks";
import type { Answer, Exchange, SentRequest } from "./types.js";

/** Milliseconds since the run started, to a tenth. */
export class Clock {
  private readonly origin = performance.now();
  now(): number {
    return Math.round((performance.now() - this.origin) * 10) / 10;
  }
}

export type Prepared = {
  /** Resolves once the connection is up and the headers are out (or it failed). */
  ready: Promise<void>;
  release: () => void;
  done: Promise<Exchange>;
};

const flat = (headers: http.IncomingHttpHeaders): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : (v ?? "")]));

/**
 * `url` as reports show it: userinfo (`https://user:secret@host/`) is a
 * credential, so it becomes `***` in the table, --json and --junit whatever
 * --no-redact says; the request itself still sends it. Text that does not
 * parse as a URL is masked the same way.
 */
export function shownUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, "$1***@");
}

function describe(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  return [e.code, e.message].filter(Boolean).join(": ") || String(error);
}

export function prepare(clock: Clock, label: string, request: SentRequest, timeoutMs: number): Prepared {
  const url = new URL(request.url);
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  const headers: Record<string, string> = { ...request.headers };
  if (body) headers["content-length"] = String(body.length);
  const exchange: Exchange = {
    label,
    request: { ...request, url: shownUrl(request.url) },
    startedAt: new Date().toISOString(),
    sentMs: clock.now(),
    answeredMs: 0,
  };
  const req = (url.protocol === "https:" ? https : http).request(url, {
    method: request.method,
    headers,
    agent: false,
    timeout: timeoutMs,
  });
  let connected!: () => void;
  const ready = new Promise<void>((resolve) => (connected = resolve));
  req.on("socket", (socket) => {
    const event = url.protocol === "https:" ? "secureConnect" : "connect";
    if (socket.connecting || url.protocol === "https:") socket.once(event, connected);
    else connected();
  });
  req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
  const done = new Promise<Exchange>((resolve) => {
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const answer: Answer = { status: res.statusCode ?? 0, headers: flat(res.headers), body: Buffer.concat(chunks).toString("utf8") };
        resolve({ ...exchange, answer, answeredMs: clock.now() });
      });
      res.on("error", (error) => resolve({ ...exchange, error: describe(error), answeredMs: clock.now() }));
    });
    req.on("error", (error) => {
      connected();
      resolve({ ...exchange, error: describe(error), answeredMs: clock.now() });
    });
  });
  req.flushHeaders();
  return {
    ready,
    done,
    release: () => {
      exchange.startedAt = new Date().toISOString();
      exchange.sentMs = clock.now();
      req.end(body);
    },
  };
}

export async function send(clock: Clock, label: string, request: SentRequest, timeoutMs: number): Promise<Exchange> {
  const p = prepare(clock, label, request, timeoutMs);
  await p.ready;
  p.release();
  return p.done;
}

/** Every request connected first, then all bodies released in one loop. */
export async function sendTogether(clock: Clock, items: { label: string; request: SentRequest }[], timeoutMs: number): Promise<Exchange[]> {
  const prepared = items.map((i) => prepare(clock, i.label, i.request, timeoutMs));
  await Promise.all(prepared.map((p) => p.ready));
  for (const p of prepared) p.release();
  return Promise.all(prepared.map((p) => p.done));
}
