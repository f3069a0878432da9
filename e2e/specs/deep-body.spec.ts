/**
 * The denial of service that one anonymous request used to be, against the
 * real server: a 64 KiB body of nested arrays (about 32,000 levels) sent
 * without any credential to a REST route, a tRPC mutation and the admin
 * sign-in is a 400 problem in milliseconds, and the health check keeps
 * answering while they are sent. The times are attached to the test's
 * report (`deep body` annotations).
 */
import { request as httpRequest } from "node:http";
import { expect, test } from "@playwright/test";
import { BASE_URL, E2E_PORT } from "../support/settings";

const DEPTH = 32 * 1024 - 1;
const DEEP = `${"[".repeat(DEPTH)}0${"]".repeat(DEPTH)}`;

function post(path: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${BASE_URL}${path}`, { method: "POST", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text, ms: performance.now() - started }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

test("a 64 KiB body of nested arrays is a 400 in milliseconds at every entrance, and health answers meanwhile", async ({ request }) => {
  const json = { "content-type": "application/json", host: `127.0.0.1:${E2E_PORT}` };
  const entrances = [
    post("/api/v1/payments", { ...json, "idempotency-key": `deep-${Date.now()}` }, DEEP),
    post("/api/trpc/checkout.pay", json, DEEP),
    post("/admin/session", { ...json, origin: BASE_URL }, DEEP),
  ];
  // Health, asked again and again while the three bodies are read and refused.
  const healthMs: number[] = [];
  let done = false;
  const polling = (async () => {
    while (!done) {
      const asked = performance.now();
      expect((await request.get("/api/health")).status()).toBe(200);
      healthMs.push(performance.now() - asked);
    }
  })();
  const answers = await Promise.all(entrances);
  done = true;
  await polling;
  for (const answer of answers) {
    expect(answer.status).toBe(400);
    expect(answer.body).toContain("json-too-deep");
  }
  const slowestHealth = Math.max(...healthMs);
  test.info().annotations.push({
    type: "deep body",
    description: `400 after ${answers.map((a) => `${Math.round(a.ms)} ms`).join(", ")}; health answered ${healthMs.length} times, slowest ${Math.round(slowestHealth)} ms`,
  });
  // The quadratic check took seconds for one such body and ran the server out of memory; a second is far above the bounded one.
  expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(1_000);
  expect(slowestHealth).toBeLessThan(1_000);
});
