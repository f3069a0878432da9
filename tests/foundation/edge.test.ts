/**
 * The Node.js edge below Next.js, on a real HTTP server and raw sockets (a
 * fetch client cannot send one header field twice): more than one
 * `Idempotency-Key` field is a 400 problem before anything else sees the
 * request, since past the edge Node.js has joined them into one value
 * (`k` and an empty field become `k,`, a key of its own). And a caller's
 * trace fields reach the app only from a caller TRUST_TRACEPARENT names.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createEdgeServer } from "../../server/edge/node-edge";
import { securityHeaders } from "../../server/edge/security-headers";
import { logger } from "../../server/logger";
import { metrics } from "../../server/observability/metrics";

let server: http.Server;
let port: number;
const reached: string[] = [];
const reachedPaths: string[] = [];
let traceFields: Record<string, unknown> = {};

/** The one caller whose traces are continued: a loopback address of its own, so the test can be it or not. */
const TRACING_CALLER = "127.0.0.2";

beforeAll(async () => {
  server = createEdgeServer({ proxy: { hops: 0 }, traceCallers: { addresses: [TRACING_CALLER] } }, (req, res) => {
    reached.push(String(req.headers["idempotency-key"]));
    reachedPaths.push(req.url ?? "");
    traceFields = { traceparent: req.headers.traceparent, tracestate: req.headers.tracestate, baggage: req.headers.baggage };
    res.end("through");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

type RawAnswer = { status: number; headers: Record<string, string>; body: string };

/** One request with these raw header lines (to this path, with this method); the status, the header fields and the body of the answer. */
function raw(headerLines: string[], localAddress = "127.0.0.1", target = "POST /api/v1/payments"): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1", localAddress }, () => {
      socket.end(
        [`${target} HTTP/1.1`, `Host: 127.0.0.1:${port}`, "Connection: close", "Content-Length: 2", ...headerLines, "", "{}"].join("\r\n"),
      );
    });
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    socket.on("end", () => {
      const head = text.slice(0, text.indexOf("\r\n\r\n")).split("\r\n");
      const headers = Object.fromEntries(
        head.slice(1).map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]),
      );
      resolve({ status: Number(head[0]!.split(" ")[1]), headers, body: text.slice(text.indexOf("\r\n\r\n") + 4) });
    });
    socket.on("error", reject);
  });
}

describe("the edge: one Idempotency-Key field", () => {
  it.each([
    ["two keys", ["Idempotency-Key: a", "Idempotency-Key: b"]],
    ["a key and an empty field", ["Idempotency-Key: k", "Idempotency-Key: "]],
    ["an empty field first", ["Idempotency-Key: ", "Idempotency-Key: k"]],
    ["the same key twice, spelled differently", ["idempotency-key: k", "IDEMPOTENCY-KEY: k"]],
  ])("%s: 400 problem, the app never sees it", async (_label, lines) => {
    reached.length = 0;
    const answer = await raw(lines);
    expect(answer.status).toBe(400);
    expect(answer.headers["x-content-type-options"]).toBe("nosniff");
    expect(JSON.parse(answer.body)).toMatchObject({
      type: "/problems/idempotency-key-invalid",
      detail: expect.stringContaining("more than one Idempotency-Key field"),
    });
    expect(reached).toEqual([]);
  });

  it("one field passes through unchanged", async () => {
    reached.length = 0;
    expect((await raw(["Idempotency-Key: k,"])).status).toBe(200);
    expect(reached).toEqual(["k,"]);
  });
});

describe("the edge: a caller's trace", () => {
  const TRACE = [
    "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "tracestate: vendor=secret",
    "baggage: user=alice",
  ];

  it("is dropped, all three fields, from a caller TRUST_TRACEPARENT does not name", async () => {
    expect((await raw(["Idempotency-Key: t1", ...TRACE])).status).toBe(200);
    expect(traceFields).toEqual({ traceparent: undefined, tracestate: undefined, baggage: undefined });
  });

  it("reaches the app from the caller it names", async () => {
    expect((await raw(["Idempotency-Key: t2", ...TRACE], TRACING_CALLER)).status).toBe(200);
    expect(traceFields).toEqual({
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      tracestate: "vendor=secret",
      baggage: "user=alice",
    });
  });
});

describe("the edge: a path whose percent-escapes do not decode", () => {
  const refusedCount = async () => (await metrics().edgeRefused.get()).values.find((v) => v.labels.reason === "malformed_path")?.value ?? 0;

  it.each([
    ["GET", "/api/%E0"],
    ["POST", "/api/trpc/%E0%A4%A"],
    ["GET", "/problems/%E0"],
    ["GET", "/docs/problems/%E0"],
    ["GET", "/checkout/confirmation/%E0"],
    ["GET", "/api/v1/payments/100%"],
    ["DELETE", "/admin/session/%zz?token=secret"],
  ])("%s %s: a 400 problem with the security headers, logged and counted, the app never sees it", async (method, path) => {
    reachedPaths.length = 0;
    const info = vi.spyOn(logger, "info");
    const before = await refusedCount();
    try {
      const answer = await raw(["Idempotency-Key: p"], "127.0.0.1", `${method} ${path}`);
      expect(answer.status).toBe(400);
      expect(answer.headers["content-type"]).toBe("application/problem+json");
      for (const { key, value } of securityHeaders(false)) expect(answer.headers[key.toLowerCase()], key).toBe(value);
      expect(JSON.parse(answer.body)).toEqual({
        type: "/problems/validation",
        title: "Bad Request",
        status: 400,
        detail: "The path is not valid percent-encoded UTF-8.",
        errors: [{ field: "(path)", message: "must be valid percent-encoded UTF-8" }],
      });
      expect(reachedPaths).toEqual([]);
      expect(await refusedCount()).toBe(before + 1);
      const line = info.mock.calls.find(([, message]) => message === "refused a path whose percent-escapes do not decode");
      // The path, without its query (a token may ride there).
      expect(line?.[0]).toEqual({ method, path: path.split("?")[0], pathLength: path.split("?")[0]!.length });
    } finally {
      info.mockRestore();
    }
  });

  it("a long path is logged cut short, with its length", async () => {
    const info = vi.spyOn(logger, "info");
    try {
      const path = `/api/${"a".repeat(5000)}%E0`;
      expect((await raw([], "127.0.0.1", `GET ${path}`)).status).toBe(400);
      const [fields] = info.mock.calls.find(([, message]) => message === "refused a path whose percent-escapes do not decode")!;
      expect(fields).toEqual({ method: "GET", path: path.slice(0, 100), pathLength: path.length });
    } finally {
      info.mockRestore();
    }
  });

  it("well-formed escapes, and a malformed one in the query, pass through", async () => {
    reachedPaths.length = 0;
    for (const path of ["/api/v1/products/caf%C3%A9", "/docs/problems/validation%2F", "/api/v1/products?q=%E0"]) {
      expect((await raw(["Idempotency-Key: ok"], "127.0.0.1", `GET ${path}`)).status, path).toBe(200);
    }
    expect(reachedPaths).toEqual(["/api/v1/products/caf%C3%A9", "/docs/problems/validation%2F", "/api/v1/products?q=%E0"]);
  });
});
