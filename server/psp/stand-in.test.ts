/** The PSP stand-in over real HTTP: a fresh in-memory provider per test, plus one run as a child process. */
import { spawn } from "node:child_process";
import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { freePort } from "../../tests/support/database";
import { signWebhook, startPspStandIn, type RunningPspStandIn } from "./stand-in";

const SLOW_MS = 300;
const SECRET = "whsec_test_only";

let psp: RunningPspStandIn;
beforeEach(async () => {
  psp = await startPspStandIn({ port: 0, slowMs: SLOW_MS, webhookSecret: SECRET });
});
afterEach(() => psp.close());

/** The fields these tests read; `toMatchObject` checks the rest. */
type Body = { id: string; refunds: { amount: number }[]; data: { id: string }[] };
type Answer = { status: number; text: string; json: Body; replayed: boolean };

async function call(method: string, pathname: string, body?: unknown, key?: string): Promise<Answer> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== undefined) headers["idempotency-key"] = key;
  const response = await fetch(`${psp.url}${pathname}`, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    text,
    json: JSON.parse(text) as Body,
    replayed: response.headers.get("idempotent-replayed") === "true",
  };
}
const post = (pathname: string, body: unknown, key?: string) => call("POST", pathname, body, key);
const charges = async () => (await call("GET", "/charges")).json.data;
const order = (destination = "acct_shop", extra: Record<string, unknown> = {}) => ({
  amount: 2500,
  currency: "EUR",
  destination,
  capture: true,
  ...extra,
});

/** Starts every request only once all are set up, so they reach the server together. */
async function together<T>(count: number, run: () => Promise<T>): Promise<T[]> {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const pending = Array.from({ length: count }, async () => {
    await gate;
    return run();
  });
  release();
  return Promise.all(pending);
}

describe("the PSP stand-in", () => {
  it("answers health, unknown paths, bad JSON and a missing key", async () => {
    expect(await call("GET", "/health")).toMatchObject({ status: 200, json: { status: "ok" } });
    expect(await call("GET", "/nope")).toMatchObject({ status: 404, json: { error: { type: "not_found" } } });
    expect(await post("/charges", "{not json", "k-json")).toMatchObject({ status: 400, json: { error: { type: "invalid_json" } } });
    expect(await post("/charges", order())).toMatchObject({ status: 400, json: { error: { type: "missing_idempotency_key" } } });
    const invalid = await post("/charges", { ...order(), amount: 12.5 }, "k-invalid");
    expect(invalid).toMatchObject({ status: 400, json: { error: { type: "invalid_request", param: "amount" } } });
    expect(await charges()).toEqual([]);
  });

  it("refuses a 1 MiB body of nested arrays in one pass, and keeps answering meanwhile", async () => {
    const depth = 512 * 1024 - 1;
    const deep = post("/charges", `${"[".repeat(depth)}0${"]".repeat(depth)}`, "k-deep");
    const health = await call("GET", "/health");
    expect(health.status).toBe(200);
    expect(await deep).toMatchObject({
      status: 400,
      json: { error: { type: "invalid_json", message: "The body nests more than 64 levels deep." } },
    });
    expect(await charges()).toEqual([]);
  });

  it("replays the original answer for a repeated key and charges once", async () => {
    const first = await post("/charges", order("acct_shop", { reference: "order-1" }), "k-replay");
    expect(first).toMatchObject({ status: 201, replayed: false });
    expect(first.json).toMatchObject({ status: "succeeded", captured: true, amount: 2500, amountRefunded: 0, reference: "order-1" });
    const again = await post("/charges", order("acct_shop", { reference: "order-1" }), "k-replay");
    expect(again).toMatchObject({ status: 201, text: first.text, replayed: true });
    expect((await charges()).map((c) => c.id)).toEqual([first.json.id]);
  });

  it("tells what a key came to, read-only: unknown, running, charged, declined; a 5xx is not kept", async () => {
    expect(await call("GET", "/keys/k-never")).toMatchObject({ status: 404, json: { error: { type: "unknown_key" } } });
    const slow = post("/charges", order("acct_test_slow"), "k-running");
    await expect.poll(async () => (await call("GET", "/keys/k-running")).json).toEqual({ key: "k-running", state: "in_flight" });
    const charged = await slow;
    expect((await call("GET", "/keys/k-running")).json).toEqual({ key: "k-running", state: "answered", status: 201, body: charged.json });
    await post("/charges", order("acct_test_decline"), "k-declined");
    expect((await call("GET", "/keys/k-declined")).json).toMatchObject({
      state: "answered",
      status: 402,
      body: { error: { type: "card_declined" } },
    });
    expect(await post("/charges", order("acct_test_error"), "k-5xx")).toMatchObject({ status: 500 });
    expect((await call("GET", "/keys/k-5xx")).status).toBe(404);
    // Looking never charges, and slashes in a key survive the path.
    expect((await call("GET", `/keys/${encodeURIComponent("a/b")}`)).status).toBe(404);
    expect((await charges()).map((c) => c.id)).toEqual([charged.json.id]);
  });

  it("refuses the same key with a different body or path", async () => {
    await post("/charges", order(), "k-mismatch");
    const other = await post("/charges", { ...order(), amount: 2600 }, "k-mismatch");
    expect(other).toMatchObject({ status: 422, json: { error: { type: "idempotency_key_mismatch" } } });
    const [charge] = await charges();
    const elsewhere = await post(`/charges/${charge!.id}/refunds`, { amount: 1 }, "k-mismatch");
    expect(elsewhere.status).toBe(422);
    expect(await charges()).toHaveLength(1);
  });

  it.each(["acct_shop", "acct_test_slow"])("makes one charge from 20 concurrent requests with one key (%s)", async (destination) => {
    const answers = await together(20, () => post("/charges", order(destination), `k-burst-${destination}`));
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([201]));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers.filter((a) => !a.replayed)).toHaveLength(1);
    expect(await charges()).toHaveLength(1);
  });

  it("records a decline per key and replays it without charging", async () => {
    const first = await post("/charges", order("acct_test_decline"), "k-decline");
    expect(first).toMatchObject({ status: 402, json: { error: { type: "card_declined", message: "The card was declined." } } });
    expect(await post("/charges", order("acct_test_decline"), "k-decline")).toMatchObject({
      status: 402,
      text: first.text,
      replayed: true,
    });
    expect(await charges()).toEqual([]);
  });

  it("records a slow charge at once and answers after slowMs", async () => {
    const started = performance.now();
    const answer = post("/charges", order("acct_test_slow"), "k-slow");
    await new Promise((resolve) => setTimeout(resolve, SLOW_MS / 3));
    expect(await charges()).toHaveLength(1);
    const { status, json } = await answer;
    expect(performance.now() - started).toBeGreaterThanOrEqual(SLOW_MS - 5);
    expect(status).toBe(201);
    expect((await charges()).map((c) => c.id)).toEqual([json.id]);
  });

  it("fails the first attempt for an error key with a 500 and charges on the next", async () => {
    const first = await post("/charges", order("acct_test_error"), "k-error");
    expect(first).toMatchObject({ status: 500, json: { error: { type: "provider_error" } } });
    expect(await charges()).toEqual([]);
    const second = await post("/charges", order("acct_test_error"), "k-error");
    expect(second).toMatchObject({ status: 201, replayed: false });
    expect(await post("/charges", order("acct_test_error"), "k-error")).toMatchObject({ status: 201, text: second.text });
    expect(await post("/charges", order("acct_test_error"), "k-error-other")).toMatchObject({ status: 500 });
    expect(await charges()).toHaveLength(1);
  });

  it("captures or voids an authorisation, never both", async () => {
    const held = (await post("/charges", order("acct_shop", { capture: false }), "k-auth-1")).json;
    expect(held).toMatchObject({ status: "requires_capture", captured: false });
    const captured = await post(`/charges/${held.id}/capture`, {}, "k-cap-1");
    expect(captured).toMatchObject({ status: 200, json: { status: "succeeded", captured: true } });
    expect(await post(`/charges/${held.id}/capture`, {}, "k-cap-1")).toMatchObject({ text: captured.text, replayed: true });
    expect(await post(`/charges/${held.id}/void`, undefined, "k-void-1")).toMatchObject({
      status: 400,
      json: { error: { type: "invalid_state" } },
    });
    expect(await post(`/charges/${held.id}/capture`, {}, "k-cap-1b")).toMatchObject({ status: 400 });

    const other = (await post("/charges", order("acct_shop", { capture: false }), "k-auth-2")).json;
    expect(await post(`/charges/${other.id}/void`, {}, "k-void-2")).toMatchObject({ status: 200, json: { status: "canceled" } });
    expect(await post(`/charges/${other.id}/capture`, {}, "k-cap-2")).toMatchObject({
      status: 400,
      json: { error: { type: "invalid_state" } },
    });

    const immediate = (await post("/charges", order(), "k-auth-3")).json;
    expect(await post(`/charges/${immediate.id}/void`, {}, "k-void-3")).toMatchObject({ status: 400 });
    expect(await post("/charges/ch_missing/capture", {}, "k-cap-4")).toMatchObject({ status: 404 });
    expect(await post(`/charges/${held.id}/capture`, {})).toMatchObject({
      status: 400,
      json: { error: { type: "missing_idempotency_key" } },
    });
  });

  it("keeps refunds within the captured amount", async () => {
    const charge = (await post("/charges", { ...order(), amount: 1000 }, "k-refundable")).json;
    const first = await post(`/charges/${charge.id}/refunds`, { amount: 600 }, "k-r1");
    expect(first).toMatchObject({ status: 201, json: { chargeId: charge.id, amount: 600 } });
    expect(first.json.id).toMatch(/^re_/);
    expect(await post(`/charges/${charge.id}/refunds`, { amount: 600 }, "k-r1")).toMatchObject({ text: first.text, replayed: true });
    expect(await post(`/charges/${charge.id}/refunds`, { amount: 401 }, "k-r2")).toMatchObject({
      status: 400,
      json: { error: { type: "amount_too_large" } },
    });
    expect(await post(`/charges/${charge.id}/refunds`, { amount: 400 }, "k-r3")).toMatchObject({ status: 201 });
    expect(await post(`/charges/${charge.id}/refunds`, { amount: 1 }, "k-r4")).toMatchObject({ status: 400 });

    const stored = await call("GET", `/charges/${charge.id}`);
    expect(stored.json).toMatchObject({ amountRefunded: 1000, status: "succeeded" });
    expect(stored.json.refunds.map((r) => r.amount)).toEqual([600, 400]);

    const held = (await post("/charges", order("acct_shop", { capture: false }), "k-held")).json;
    expect(await post(`/charges/${held.id}/refunds`, { amount: 1 }, "k-r5")).toMatchObject({
      status: 400,
      json: { error: { type: "invalid_state" } },
    });
    expect(await call("GET", "/charges/ch_missing")).toMatchObject({ status: 404 });
  });

  it("lists charges oldest first, each with its refunds", async () => {
    const a = (await post("/charges", order(), "k-list-a")).json;
    const b = (await post("/charges", order(), "k-list-b")).json;
    const list = (await call("GET", "/charges")).json.data;
    expect(list.map((c) => c.id)).toEqual([a.id, b.id]);
    expect(list[0]).toMatchObject({ refunds: [] });
  });

  it("signs webhooks with an HMAC of the exact bytes it delivers", async () => {
    const received: { body: string; signature: string | undefined }[] = [];
    const receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        received.push({ body: Buffer.concat(chunks).toString("utf8"), signature: req.headers["psp-signature"] as string | undefined });
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const event = { type: "charge.refunded", id: "evt_1", data: { paymentId: "pay_1", amount: "5.00" } };
      const sender = await startPspStandIn({ port: 0, slowMs: SLOW_MS, webhookSecret: SECRET, webhookUrls: [url] });
      try {
        const body = JSON.stringify({ url, event });
        const answer = await fetch(`${sender.url}/webhooks/send`, {
          method: "POST",
          headers: { "content-type": "application/json", "psp-signature": signWebhook(body, SECRET) },
          body,
        });
        expect([answer.status, await answer.json()]).toEqual([200, { status: 202 }]);
      } finally {
        await sender.close();
      }
      const [delivery] = received;
      expect(delivery!.body).toBe(JSON.stringify(event));
      const expected = createHmac("sha256", SECRET).update(delivery!.body).digest();
      expect(timingSafeEqual(Buffer.from(delivery!.signature!, "hex"), expected)).toBe(true);
      expect(signWebhook(delivery!.body, SECRET)).toBe(delivery!.signature);
      expect(signWebhook(delivery!.body, "whsec_other")).not.toBe(delivery!.signature);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});

describe("the stand-in's edge", () => {
  /** A stand-in that may deliver to `allowed` only, and what reached a receiver there. */
  async function withReceiver(test: (sender: RunningPspStandIn, url: string, received: string[]) => Promise<void>) {
    const received: string[] = [];
    const receiver = http.createServer((req, res) => {
      received.push(req.url ?? "");
      res.writeHead(202).end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    const sender = await startPspStandIn({ port: 0, slowMs: SLOW_MS, webhookSecret: SECRET, webhookUrls: [`${origin}/allowed`] });
    try {
      await test(sender, origin, received);
    } finally {
      await sender.close();
      await new Promise((resolve) => receiver.close(resolve));
    }
  }
  const event = { type: "charge.refunded", id: "evt_edge", data: { paymentId: "pay_1", amount: "5.00" } };
  const send = (sender: RunningPspStandIn, body: string, headers: Record<string, string>) =>
    fetch(`${sender.url}/webhooks/send`, { method: "POST", headers, body });

  it("refuses an unsigned, a wrongly signed and a text/plain control request, and a URL it was not started with: nothing delivered", async () => {
    await withReceiver(async (sender, origin, received) => {
      const body = JSON.stringify({ url: `${origin}/allowed`, event });
      const elsewhere = JSON.stringify({ url: `${origin}/elsewhere`, event });
      const answers = [
        await send(sender, body, { "content-type": "application/json" }),
        await send(sender, body, { "content-type": "application/json", "psp-signature": signWebhook(body, "whsec_not_it") }),
        // What a cross-site form or fetch without a preflight can send.
        await send(sender, body, { "content-type": "text/plain", "psp-signature": signWebhook(body, SECRET) }),
        await send(sender, elsewhere, { "content-type": "application/json", "psp-signature": signWebhook(elsewhere, SECRET) }),
      ];
      expect(answers.map((a) => a.status)).toEqual([401, 401, 415, 400]);
      expect(received).toEqual([]);
      const signed = await send(sender, body, { "content-type": "application/json", "psp-signature": signWebhook(body, SECRET) });
      expect(signed.status).toBe(200);
      expect(received).toEqual(["/allowed"]);
    });
  });

  it("answers 421 to a Host that is not a loopback name (DNS rebinding), before any route", async () => {
    const get = (host: string) =>
      new Promise<number>((resolve, reject) => {
        http.get(`${psp.url}/charges`, { headers: { host } }, (res) => resolve(res.resume().statusCode ?? 0)).on("error", reject);
      });
    expect(await get("rebind.attacker.example")).toBe(421);
    expect(await get(`rebind.attacker.example:${psp.port}`)).toBe(421);
    expect(await get(`localhost:${psp.port}`)).toBe(200);
    expect(await get(`127.0.0.1:${psp.port}`)).toBe(200);
  });
});

describe("the stand-in process", () => {
  it("serves /health and exits cleanly on SIGTERM", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ["--import", "tsx", "server/psp/main.ts"], {
      cwd: path.resolve(import.meta.dirname, "../.."),
      env: { ...process.env, PSP_PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    try {
      let stderr = "";
      await new Promise<void>((resolve, reject) => {
        child.stderr.on("data", (chunk: Buffer) => {
          stderr += chunk.toString("utf8");
          if (stderr.includes(`PSP stand-in listening on http://127.0.0.1:${port}`)) resolve();
        });
        void exited.then(() => reject(new Error(`stand-in exited early:\n${stderr}`)));
      });
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: "ok" });
      child.kill("SIGTERM");
      expect(await exited).toEqual({ code: 0, signal: null });
      await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  });
});
