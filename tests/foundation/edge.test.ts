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
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEdgeServer } from "../../server/edge/node-edge";

let server: http.Server;
let port: number;
const reached: string[] = [];
let traceFields: Record<string, unknown> = {};

/** The one caller whose traces are continued: a loopback address of its own, so the test can be it or not. */
const TRACING_CALLER = "127.0.0.2";

beforeAll(async () => {
  server = createEdgeServer({ proxy: { hops: 0 }, traceCallers: { addresses: [TRACING_CALLER] } }, (req, res) => {
    reached.push(String(req.headers["idempotency-key"]));
    traceFields = { traceparent: req.headers.traceparent, tracestate: req.headers.tracestate, baggage: req.headers.baggage };
    res.end("through");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** One request with these raw header lines; the status line and the body of the answer. */
function raw(headerLines: string[], localAddress = "127.0.0.1"): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1", localAddress }, () => {
      socket.end(
        [
          `POST /api/v1/payments HTTP/1.1`,
          `Host: 127.0.0.1:${port}`,
          "Connection: close",
          "Content-Length: 2",
          ...headerLines,
          "",
          "{}",
        ].join("\r\n"),
      );
    });
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    socket.on("end", () => resolve({ status: Number(text.split(" ")[1]), body: text.slice(text.indexOf("\r\n\r\n") + 4) }));
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
