/**
 * The cluster's HAProxy, run for real in front of a stand-in backend that
 * echoes what it was told: the client's own X-Forwarded-For/-Host never get
 * through (the instances trust one hop, so they would believe them), and
 * the stats page cannot change anything (a cross-site form once put a
 * server into maintenance).
 */
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveClient } from "../../server/edge/node-edge";
import { freePort } from "../../tests/support/database";
import { startHaproxy, type RunningHaproxy } from "./haproxy";

let backend: http.Server;
let haproxy: RunningHaproxy;
let statsUrl: string;
let runDir: string;

beforeAll(async () => {
  backend = http.createServer((req, res) => {
    const echo = { forwardedFor: req.headers["x-forwarded-for"] ?? null, forwardedHost: req.headers["x-forwarded-host"] ?? null, peer: req.socket.remoteAddress };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(echo));
  });
  await new Promise<void>((resolve) => backend.listen(0, "127.0.0.1", resolve));
  runDir = mkdtempSync(path.join(os.tmpdir(), "eo-haproxy-"));
  const statsPort = await freePort();
  statsUrl = `http://127.0.0.1:${statsPort}/`;
  haproxy = await startHaproxy({ port: await freePort(), backends: [{ name: "app1", port: (backend.address() as AddressInfo).port }], runDir, serverTimeoutMs: 5000, statsPort });
});

afterAll(async () => {
  await haproxy?.stop();
  await new Promise((resolve) => backend?.close(resolve));
  if (runDir) rmSync(runDir, { recursive: true, force: true });
});

describe("HAProxy in front of the instances", () => {
  it("forwards the client's real address and drops the forwarding headers the client made up", async () => {
    const res = await fetch(`${haproxy.url}/anything`, { headers: { "x-forwarded-for": "203.0.113.66", "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" } });
    const echo = (await res.json()) as { forwardedFor: string; forwardedHost: string | null; peer: string };
    expect(echo.forwardedFor).toBe("127.0.0.1");
    expect(echo.forwardedHost).toBeNull();
    // What an instance with TRUST_PROXY=1 then takes for the client.
    expect(resolveClient(echo.peer, echo.forwardedFor, { hops: 1 }).client).toBe("127.0.0.1");
  });

  it("serves a read-only stats page: a posted maintenance action changes nothing", async () => {
    expect((await fetch(statsUrl)).status).toBe(200);
    await fetch(statsUrl, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "s=app1&action=maint&b=instances" });
    const state = await haproxy.command("show servers state instances");
    // Field 6 of a server line is its administrative state: 0 is none, 1 or more is maintenance.
    const line = state.split("\n").find((l) => l.includes(" app1 "))!;
    expect(line.split(" ")[6]).toBe("0");
  });
});

describe("resolveClient", () => {
  it("believes no header without TRUST_PROXY, the hops it is told, and only listed proxies", () => {
    expect(resolveClient("10.0.0.9", "203.0.113.1", { hops: 0 })).toEqual({ client: "10.0.0.9", viaTrustedProxy: false });
    expect(resolveClient("10.0.0.9", "198.51.100.7, 203.0.113.1", { hops: 1 })).toEqual({ client: "203.0.113.1", viaTrustedProxy: true });
    expect(resolveClient("10.0.0.9", "198.51.100.7, 203.0.113.1", { hops: 2 })).toEqual({ client: "198.51.100.7", viaTrustedProxy: true });
    expect(resolveClient("10.0.0.9", undefined, { hops: 3 })).toEqual({ client: "10.0.0.9", viaTrustedProxy: true });
    expect(resolveClient("10.0.0.9", "6.6.6.6, 203.0.113.1", { addresses: ["10.0.0.9"] })).toEqual({ client: "203.0.113.1", viaTrustedProxy: true });
    expect(resolveClient("10.0.0.8", "203.0.113.1", { addresses: ["10.0.0.9"] })).toEqual({ client: "10.0.0.8", viaTrustedProxy: false });
  });
});
