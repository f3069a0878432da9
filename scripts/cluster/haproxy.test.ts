/**
 * The cluster's HAProxy, run for real in front of a stand-in backend that
 * echoes what it was told: the client's own X-Forwarded-For/-Host never get
 * through, HAProxy connects from its own source address (the only one the
 * instances believe), the stats page cannot change anything (a cross-site
 * form once put a server into maintenance) and answers only a loopback Host,
 * and a key with a TAB cannot add fields to the log line.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveClient } from "../../server/edge/node-edge";
import { freePort } from "../../tests/support/database";
import { HAPROXY_SOURCE, readHaproxyLog, startHaproxy, type RunningHaproxy } from "./haproxy";

let backend: http.Server;
let haproxy: RunningHaproxy;
let statsUrl: string;
let runDir: string;

beforeAll(async () => {
  backend = http.createServer((req, res) => {
    const echo = {
      forwardedFor: req.headers["x-forwarded-for"] ?? null,
      forwardedHost: req.headers["x-forwarded-host"] ?? null,
      peer: req.socket.remoteAddress,
    };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(echo));
  });
  await new Promise<void>((resolve) => backend.listen(0, "127.0.0.1", resolve));
  runDir = mkdtempSync(path.join(os.tmpdir(), "eo-haproxy-"));
  const statsPort = await freePort();
  statsUrl = `http://127.0.0.1:${statsPort}/`;
  haproxy = await startHaproxy({
    port: await freePort(),
    backends: [{ name: "app1", port: (backend.address() as AddressInfo).port }],
    runDir,
    serverTimeoutMs: 5000,
    statsPort,
  });
});

afterAll(async () => {
  await haproxy?.stop();
  await new Promise((resolve) => backend?.close(resolve));
  if (runDir) rmSync(runDir, { recursive: true, force: true });
});

describe("HAProxy in front of the instances", () => {
  it("forwards the client's real address and drops the forwarding headers the client made up", async () => {
    const res = await fetch(`${haproxy.url}/anything`, {
      headers: { "x-forwarded-for": "203.0.113.66", "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" },
    });
    const echo = (await res.json()) as { forwardedFor: string; forwardedHost: string | null; peer: string };
    expect(echo.forwardedFor).toBe("127.0.0.1");
    expect(echo.forwardedHost).toBeNull();
    // HAProxy comes from its own loopback address, which is what an instance trusts (TRUST_PROXY=HAPROXY_SOURCE).
    expect(echo.peer).toBe(HAPROXY_SOURCE);
    expect(resolveClient(echo.peer, echo.forwardedFor, { addresses: [HAPROXY_SOURCE] }).client).toBe("127.0.0.1");
    // A client on this machine that reaches an instance directly, with a made-up header, is itself: not what it claims.
    expect(resolveClient("127.0.0.1", "203.0.113.66", { addresses: [HAPROXY_SOURCE] })).toEqual({
      client: "127.0.0.1",
      viaTrustedProxy: false,
    });
  });

  it("logs a key with a TAB in one field: HAProxy escapes it, so it cannot add fields to the line", async () => {
    await fetch(`${haproxy.url}/tab`, { headers: { "idempotency-key": "a\tb" } });
    await new Promise((r) => setTimeout(r, 200));
    const lines = readFileSync(haproxy.logPath, "utf8")
      .split("\n")
      .filter((l) => l.startsWith("EO\t") && l.includes("/tab"));
    expect(lines).toHaveLength(1);
    expect(lines[0]!.split("\t")).toHaveLength(9);
    // Read back as it was sent.
    expect(readHaproxyLog(haproxy.logPath).find((r) => r.path === "/tab")?.key).toBe("a\tb");
  });

  it("answers the stats page only for a loopback Host: a rebinding page's own name gets 421", async () => {
    const url = new URL(statsUrl);
    const get = (host: string) =>
      new Promise<number>((resolve, reject) =>
        http
          .get({ host: url.hostname, port: url.port, path: "/", headers: { host } }, (res) => (res.resume(), resolve(res.statusCode ?? 0)))
          .on("error", reject),
      );
    expect(await get(`localhost:${url.port}`)).toBe(200);
    expect(await get(`127.0.0.1:${url.port}`)).toBe(200);
    expect(await get(`rebind.attacker.example:${url.port}`)).toBe(421);
  });

  it("serves a read-only stats page: a posted maintenance action changes nothing", async () => {
    expect((await fetch(statsUrl)).status).toBe(200);
    await fetch(statsUrl, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "s=app1&action=maint&b=instances",
    });
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
    expect(resolveClient("10.0.0.9", "6.6.6.6, 203.0.113.1", { addresses: ["10.0.0.9"] })).toEqual({
      client: "203.0.113.1",
      viaTrustedProxy: true,
    });
    expect(resolveClient("10.0.0.8", "203.0.113.1", { addresses: ["10.0.0.9"] })).toEqual({ client: "10.0.0.8", viaTrustedProxy: false });
  });
});
