/** The PSP client against a real stand-in, and against tiny fake servers for the retry rules. */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { freePort } from "../../tests/support/database";
import { createPspClient, PspOutcomeUnknownError, PspProtocolError, PspServerError, type ChargeInput } from "./client";
import { startPspStandIn, type RunningPspStandIn } from "./stand-in";

const SLOW_MS = 400;

let psp: RunningPspStandIn;
beforeEach(async () => {
  psp = await startPspStandIn({ port: 0, slowMs: SLOW_MS, webhookSecret: "whsec_test_only" });
});
afterEach(() => psp.close());

const client = (options: { timeoutMs?: number; attempts?: number } = {}) =>
  createPspClient({ baseUrl: psp.url, timeoutMs: options.timeoutMs ?? 2_000, attempts: options.attempts, baseDelayMs: 10 });
const input = (destination = "acct_shop", capture = true): ChargeInput => ({ amount: 2500, currency: "EUR", destination, capture });

async function chargeCount() {
  const list = await client().listCharges();
  if (list.kind !== "ok") throw new Error(`listCharges: ${list.kind}`);
  return list.charges.length;
}

type Seen = { method: string; url: string; key: string | undefined };

/** A server that answers every request with `status` and `body` and remembers what it was sent. */
async function fakeProvider(status: number, body: string) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, key: req.headers["idempotency-key"] as string | undefined });
    req.resume().on("end", () => res.writeHead(status, { "content-type": "application/json" }).end(body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { seen, baseUrl, close: () => new Promise((resolve) => server.close(resolve)) };
}

describe("the PSP client", () => {
  it("charges, captures, voids, refunds and lists, replaying by key", async () => {
    const api = client();
    const charged = await api.charge(input(), "dk-1");
    expect(charged).toMatchObject({ kind: "ok", charge: { status: "succeeded", amount: 2500, captured: true } });
    const again = await api.charge(input(), "dk-1");
    expect(again).toEqual(charged);
    if (charged.kind !== "ok") throw new Error("not charged");

    expect(await api.refund(charged.charge.id, 1000, "dk-1-r1")).toMatchObject({ kind: "ok", refund: { amount: 1000 } });
    expect(await api.refund(charged.charge.id, 1501, "dk-1-r2")).toEqual({
      kind: "rejected",
      status: 400,
      type: "amount_too_large",
      message: expect.any(String),
    });

    const held = await api.charge(input("acct_shop", false), "dk-2");
    if (held.kind !== "ok") throw new Error("not authorised");
    expect(await api.capture(held.charge.id, "dk-2-c")).toMatchObject({ kind: "ok", charge: { status: "succeeded" } });
    expect(await api.void(held.charge.id, "dk-2-v")).toMatchObject({ kind: "rejected", status: 400, type: "invalid_state" });

    const list = await api.listCharges();
    expect(list).toMatchObject({ kind: "ok", charges: [{ id: charged.charge.id, amountRefunded: 1000 }, { id: held.charge.id }] });
  });

  it("reports a decline and replays it", async () => {
    const api = client();
    const declined = { kind: "declined", reason: "card_declined", message: "The card was declined." };
    expect(await api.charge(input("acct_test_decline"), "dk-decline")).toEqual(declined);
    expect(await api.charge(input("acct_test_decline"), "dk-decline")).toEqual(declined);
    expect(await chargeCount()).toBe(0);
  });

  it("makes one charge from 20 concurrent calls with one downstream key", async () => {
    const api = client();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const calls = Array.from({ length: 20 }, async () => {
      await gate;
      return api.charge(input("acct_test_slow"), "dk-burst");
    });
    release();
    const results = await Promise.all(calls);
    const ids = new Set(results.map((r) => (r.kind === "ok" ? r.charge.id : r.kind)));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^ch_/);
    expect(await chargeCount()).toBe(1);
  });

  it("gives up on a slow provider as unknown, and the retry with the same key finds the one charge", async () => {
    const impatient = await client({ timeoutMs: 100, attempts: 1 }).charge(input("acct_test_slow"), "dk-slow");
    expect(impatient.kind).toBe("unknown");
    if (impatient.kind !== "unknown") return;
    expect(impatient.cause).toBeInstanceOf(PspOutcomeUnknownError);
    expect((impatient.cause.cause as Error).name).toBe("TimeoutError");
    expect(await chargeCount()).toBe(1);

    const patient = await client({ timeoutMs: 2_000 }).charge(input("acct_test_slow"), "dk-slow");
    expect(patient.kind).toBe("ok");
    expect(await chargeCount()).toBe(1);
  });

  it("keeps retrying a slow charge with the same key until the original answer arrives", async () => {
    const result = await client({ timeoutMs: 150, attempts: 6 }).charge(input("acct_test_slow"), "dk-slow-retry");
    expect(result.kind).toBe("ok");
    expect(await chargeCount()).toBe(1);
  });

  it("retries the provider's first 500 and charges once", async () => {
    const result = await client().charge(input("acct_test_error"), "dk-error");
    expect(result).toMatchObject({ kind: "ok", charge: { destination: "acct_test_error" } });
    expect(await chargeCount()).toBe(1);
    expect(await client({ attempts: 1 }).charge(input("acct_test_error"), "dk-error-once")).toMatchObject({
      kind: "unknown",
      cause: { cause: { status: 500, type: "provider_error" } },
    });
  });

  it("retries a 5xx a bounded number of times with the same key", async () => {
    const fake = await fakeProvider(503, '{"error":{"type":"unavailable"}}');
    try {
      const result = await createPspClient({ baseUrl: fake.baseUrl, timeoutMs: 1_000, attempts: 4, baseDelayMs: 5 }).charge(
        input(),
        "dk-503",
      );
      expect(result.kind).toBe("unknown");
      if (result.kind === "unknown") {
        expect(result.cause.attempts).toBe(4);
        expect(result.cause.cause).toBeInstanceOf(PspServerError);
      }
      expect(fake.seen).toEqual(Array.from({ length: 4 }, () => ({ method: "POST", url: "/charges", key: "dk-503" })));
    } finally {
      await fake.close();
    }
  });

  it("never retries a 4xx", async () => {
    const fake = await fakeProvider(429, '{"error":{"type":"rate_limited"}}');
    try {
      const result = await createPspClient({ baseUrl: fake.baseUrl, timeoutMs: 1_000, baseDelayMs: 5 }).refund("ch_1", 100, "dk-429");
      expect(result).toEqual({ kind: "rejected", status: 429, type: "rate_limited", message: undefined });
      expect(fake.seen).toHaveLength(1);
    } finally {
      await fake.close();
    }
  });

  it("does not retry a success it cannot read", async () => {
    const fake = await fakeProvider(201, "<html>");
    try {
      const result = await createPspClient({ baseUrl: fake.baseUrl, timeoutMs: 1_000, baseDelayMs: 5 }).charge(input(), "dk-garbled");
      expect(result).toMatchObject({ kind: "unknown", cause: { attempts: 1 } });
      if (result.kind === "unknown") expect(result.cause.cause).toBeInstanceOf(PspProtocolError);
      expect(fake.seen).toHaveLength(1);
    } finally {
      await fake.close();
    }
  });

  it("reports an unreachable provider as unknown after its attempts", async () => {
    const port = await freePort();
    const result = await createPspClient({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 500, attempts: 2, baseDelayMs: 5 }).charge(
      input(),
      "dk-down",
    );
    expect(result).toMatchObject({ kind: "unknown", cause: { name: "PspOutcomeUnknownError", attempts: 2 } });
  });
});
