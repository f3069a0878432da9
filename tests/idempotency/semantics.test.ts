/**
 * The middleware's answers through the app's entrances: REST (problem+json,
 * the route's status, the exact bytes) and tRPC (the caller, the endpoint's
 * response headers), one key shared by both; the app's own answers that come
 * before any key is claimed (validation, authentication); and a business
 * refusal stored by the app's result policy. The middleware's rules
 * themselves are the package's to test (packages/trpc/test).
 */
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { app } from "../../server/app";
import { responseMeta } from "../../server/edge/trpc-endpoint";
import { trpcError } from "../support/api";
import {
  caller,
  count,
  effectsFor,
  ensureEffectsTable,
  hooks,
  keyRow,
  newTenant,
  park,
  post,
  testRouter,
  uniqueKey,
  type TestTenant,
} from "./fixture";

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("semantics");
});

describe("Idempotency-Key header", () => {
  it("missing: 400 over REST and BAD_REQUEST over tRPC; nothing runs", async () => {
    const tag = uniqueKey("missing");
    const res = await post(tenant, "/t/atomic", { tag, amount: 1 });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(await res.json()).toMatchObject({ type: "/problems/idempotency-key-missing", status: 400 });
    const err = await trpcError((await caller(tenant)).atomic({ tag, amount: 1 }));
    expect(err.code).toBe("BAD_REQUEST");
    const n = await count(database().sql<{ count: number }[]>`select count(*)::int as count from test_effects where note = ${tag}`);
    expect(n).toBe(0);
  });
});

describe("first request and replay", () => {
  it("REST: runs once, stores the result, replays status and exact bytes with Idempotent-Replayed", async () => {
    const key = uniqueKey();
    const first = await post(tenant, "/t/atomic", { tag: key, amount: 25 }, key);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const firstBody = await first.text();
    for (let i = 1; i <= 3; i++) {
      const again = await post(tenant, "/t/atomic", { tag: key, amount: 25 }, key);
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(await again.text()).toBe(firstBody);
    }
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
    const row = await keyRow(tenant.id, key);
    expect(row).toMatchObject({ state: "completed", response_status: 201, response_body: firstBody, replay_count: 3 });
  });

  it("a tRPC first call and a REST retry share one key and one result", async () => {
    const key = uniqueKey();
    const first = await (await caller(tenant, key)).atomic({ tag: key, amount: 3 });
    const res = await post(tenant, "/t/atomic", { tag: key, amount: 3 }, key);
    expect(res.headers.get("idempotent-replayed")).toBe("true");
    expect(await res.json()).toEqual(first);
  });
});

describe("same key, different request", () => {
  it("a different body: 422, nothing runs, the stored result is not shown", async () => {
    const key = uniqueKey();
    const first = await post(tenant, "/t/atomic", { tag: key, amount: 25 }, key);
    const firstBody = await first.text();
    const res = await post(tenant, "/t/atomic", { tag: key, amount: 250 }, key);
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ type: "/problems/idempotency-key-mismatch", status: 422 });
    expect(text).not.toContain(JSON.parse(firstBody).id.toString() + ",");
    expect(text).not.toContain('"amount":25');
  });
});

describe("a key still held", () => {
  it("409 whose Retry-After is what the holder's lease still runs, over REST and over the tRPC endpoint", async () => {
    const key = uniqueKey("retryafter");
    // The holder commits its claim (a 30 s lease) and stops between its phases.
    const hold = park(key, "between");
    const first = post(tenant, "/t/recoverable-no-wait", { tag: key, amount: 1 }, key);
    await hold.entered;
    const rest = await post(tenant, "/t/recoverable-no-wait", { tag: key, amount: 1 }, key);
    expect(rest.status).toBe(409);
    expect(await rest.json()).toMatchObject({ type: "/problems/idempotency-key-in-progress", status: 409 });
    expect(Number(rest.headers.get("retry-after"))).toBeGreaterThan(20);
    expect(Number(rest.headers.get("retry-after"))).toBeLessThanOrEqual(30);

    const trpc = await fetchRequestHandler({
      endpoint: "/api/trpc",
      req: new Request("http://test/api/trpc/recoverableNoWait", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ tag: key, amount: 1 }),
      }),
      router: testRouter,
      createContext: ({ req }) => app.createContextInner({ tenant, headers: req.headers }),
      responseMeta,
    });
    expect(trpc.status).toBe(409);
    expect(Number(trpc.headers.get("retry-after"))).toBeGreaterThan(20);
    expect(Number(trpc.headers.get("retry-after"))).toBeLessThanOrEqual(30);

    hold.release();
    expect((await first).status).toBe(201);
    expect(await effectsFor(tenant.id, key)).toHaveLength(2);
    hooks.delete(key);
  });
});

describe("what is stored", () => {
  it("a malformed request is answered before the claim and pins nothing: fix it and retry with the same key", async () => {
    const key = uniqueKey();
    const bad = await post(tenant, "/t/atomic", { tag: key, amount: "ten" }, key);
    expect(bad.status).toBe(400);
    const problem = await bad.json();
    expect(problem).toMatchObject({ type: "/problems/validation", status: 400 });
    expect(problem.errors[0].field).toBe("amount");
    expect(await keyRow(tenant.id, key)).toBeUndefined();
    const notJson = await post(tenant, "/t/atomic", "{oops", key);
    expect(notJson.status).toBe(400);
    expect(await keyRow(tenant.id, key)).toBeUndefined();
    expect((await post(tenant, "/t/atomic", { tag: key, amount: 10 }, key)).status).toBe(201);
  });

  it("a business refusal is stored and replayed byte for byte; its writes are rolled back", async () => {
    const key = uniqueKey();
    const first = await post(tenant, "/t/atomic", { tag: key, amount: 5, outcome: "refuse" }, key);
    expect(first.status).toBe(402);
    expect(first.headers.get("content-type")).toBe("application/problem+json");
    const body = await first.text();
    expect(JSON.parse(body)).toMatchObject({ type: "/problems/payment-declined", status: 402 });
    const again = await post(tenant, "/t/atomic", { tag: key, amount: 5, outcome: "refuse" }, key);
    expect(again.status).toBe(402);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.text()).toBe(body);
    expect(await effectsFor(tenant.id, key)).toHaveLength(0);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "failed", response_status: 402, response_body: body });
    const err = await trpcError((await caller(tenant, key)).atomic({ tag: key, amount: 5, outcome: "refuse" }));
    expect(err.code).toBe("PAYMENT_REQUIRED");
  });
});

describe("authentication", () => {
  it("401 without a valid token, before any key is claimed", async () => {
    const key = uniqueKey();
    const res = await post({ ...tenant, token: "eo_wrong" }, "/t/atomic", { tag: key, amount: 1 }, key);
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const n = await count(database().sql<{ count: number }[]>`select count(*)::int as count from idempotency_keys where key = ${key}`);
    expect(n).toBe(0);
  });
});
