/**
 * What a hostile page or client can no longer do against the real server
 * (the run command's demo mode), over raw HTTP so every header is the
 * test's own: a rebound Host name is a 421 before any handler; TRACE and
 * TRACK are 405 problems; a made-up X-Forwarded-For does not give a client
 * a fresh sign-in bucket, and a made-up X-Forwarded-Host does not pass the
 * same-origin check (TRUST_PROXY is off); admin answers are never cached.
 */
import { request as httpRequest } from "node:http";
import { expect, test } from "@playwright/test";
import { DEMO_OPERATOR } from "../../server/env-schema";
import { ADMIN_PASSWORD } from "../pages/admin-page";
import { BASE_URL, E2E_PORT } from "../support/settings";

type Raw = { status: number; headers: Record<string, string | string[] | undefined>; body: string };

/** One request with exactly these headers, optionally from another loopback address (its own sign-in bucket). */
function raw(method: string, path: string, headers: Record<string, string>, body?: string, localAddress?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${BASE_URL}${path}`, { method, headers, localAddress }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const OWN = { host: `127.0.0.1:${E2E_PORT}`, origin: BASE_URL, "content-type": "application/json" };
const signIn = (headers: Record<string, string>, body: unknown, localAddress?: string) =>
  raw("POST", "/admin/session", headers, JSON.stringify(body), localAddress);

test("a rebound Host name gets 421 before any handler: no sign-in, no admin data", async () => {
  const rebound = `rebind.attacker.example:${E2E_PORT}`;
  const attempt = await signIn({ ...OWN, host: rebound, origin: `http://${rebound}` }, { password: ADMIN_PASSWORD });
  expect(attempt.status).toBe(421);
  expect(attempt.headers["set-cookie"]).toBeUndefined();
  expect(JSON.parse(attempt.body)).toMatchObject({ status: 421, type: "/problems/misdirected-request" });
  // /_next/image fetches the app's own URLs for its caller: behind the gate too.
  for (const path of [
    "/api/trpc/admin.keys.list?input=%7B%7D",
    "/admin",
    "/api/v1/products",
    "/_next/image?url=%2Ffavicon.ico&w=64&q=75",
  ]) {
    expect((await raw("GET", path, { host: rebound })).status).toBe(421);
  }
  // A value that only starts like a loopback name is not one (server/edge/hosts.ts parses the whole value).
  for (const host of [`[::1]${rebound}`, `127.0.0.1:${E2E_PORT} ${rebound}`, `localhost:${E2E_PORT},${rebound}`]) {
    expect((await raw("GET", "/api/v1/products", { host })).status, host).toBe(421);
  }
  expect((await raw("GET", "/api/health", { host: `localhost:${E2E_PORT}` })).status).toBe(200);
});

test("TRACE and TRACK are a 405 problem, nothing echoed", async () => {
  for (const method of ["TRACE", "TRACK"]) {
    const res = await raw(method, "/admin", { host: `127.0.0.1:${E2E_PORT}`, cookie: "eo_admin=secret" });
    expect(res.status, method).toBe(405);
    expect(res.headers["content-type"]).toBe("application/problem+json");
    expect(res.headers.allow).toContain("GET");
    expect(res.body).not.toContain("secret");
    expect(JSON.parse(res.body)).toMatchObject({ status: 405, type: "/problems/method-not-allowed" });
  }
});

test("a made-up X-Forwarded-For does not give a fresh sign-in bucket: the socket's address counts", async () => {
  // An address of this test's own on the loopback network, so no other spec shares its bucket.
  const from = `127.${1 + Math.floor(Math.random() * 200)}.${Math.floor(Math.random() * 250)}.${2 + Math.floor(Math.random() * 250)}`;
  for (let i = 0; i < 10; i++) {
    // Another unknown operator every time: only the address's bucket fills, no operator's wait.
    const res = await signIn({ ...OWN, "x-forwarded-for": `203.0.113.${i}` }, { operator: `nobody-${i}`, password: "wrong" }, from);
    expect(res.status).toBe(401);
  }
  const right = await signIn({ ...OWN, "x-forwarded-for": "198.51.100.77" }, { operator: DEMO_OPERATOR, password: ADMIN_PASSWORD }, from);
  expect(right.status).toBe(429);
  expect(Number(right.headers["retry-after"])).toBeGreaterThan(0);
});

test("a made-up X-Forwarded-Host does not pass the same-origin check", async () => {
  const res = await signIn({ ...OWN, origin: "http://evil.example", "x-forwarded-host": "evil.example" }, { password: ADMIN_PASSWORD });
  expect(res.status).toBe(403);
  expect(res.headers["set-cookie"]).toBeUndefined();
});

test("admin and API answers that carry data are never cached", async () => {
  const res = await signIn(OWN, { operator: DEMO_OPERATOR, password: ADMIN_PASSWORD });
  expect(res.status).toBe(200);
  const cookie = String(res.headers["set-cookie"]).split(";")[0]!;
  const counts = await raw("GET", "/api/trpc/admin.keys.counts?input=%7B%7D", { host: OWN.host, cookie });
  expect(counts.status).toBe(200);
  expect(counts.headers["cache-control"]).toBe("no-store");
  const sessions = await raw("GET", "/api/trpc/admin.sessions.list", { host: OWN.host, cookie });
  expect(sessions.headers["cache-control"]).toBe("no-store");
  expect(JSON.parse(sessions.body).result.data.some((s: { current: boolean }) => s.current)).toBe(true);
});

test("a path whose percent-escapes do not decode is a 400 problem with the security headers, on every route", async () => {
  for (const [method, path] of [
    ["GET", "/api/%E0"],
    ["POST", "/api/trpc/%E0%A4%A"],
    ["GET", "/problems/%E0"],
    ["GET", "/docs/problems/%E0"],
    ["GET", "/checkout/confirmation/%E0"],
  ] as const) {
    const res = await raw(
      method,
      path,
      { host: `127.0.0.1:${E2E_PORT}`, "content-type": "application/json" },
      method === "POST" ? "{}" : undefined,
    );
    expect(res.status, path).toBe(400);
    expect(res.headers["content-type"], path).toBe("application/problem+json");
    expect(res.headers["content-security-policy"], path).toContain("frame-ancestors 'none'");
    expect(res.headers["x-content-type-options"], path).toBe("nosniff");
    expect(JSON.parse(res.body), path).toMatchObject({ status: 400, type: "/problems/validation", errors: [{ field: "(path)" }] });
  }
  const metrics = await raw("GET", "/api/metrics", { host: `127.0.0.1:${E2E_PORT}` });
  expect(metrics.body).toMatch(/http_server_refused_requests_total\{reason="malformed_path"\} [1-9]/);
});
