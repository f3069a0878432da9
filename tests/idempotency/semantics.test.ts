/**
 * Every row of the contract's idempotency table, over tRPC and over REST,
 * checked in the database (executions in `test_effects`, the key's row), not
 * only in the answers.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { trpcError } from "../support/api";
import { caller, count, effectsFor, ensureEffectsTable, keyRow, newTenant, post, uniqueKey, type TestTenant } from "./fixture";

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

  it.each([
    ["empty", ""],
    ["too long", "k".repeat(256)],
    ["a space inside", "two words"],
    ["a tab inside", "tab\there"],
    ["non-ASCII", "schlüssel"],
    ["a control character", "a\u0001b"],
  ])("invalid (%s): 400, nothing stored", async (_label, key) => {
    // Headers refuses some of these outright; the REST client would not be able to send them either.
    let res: Response;
    try {
      res = await post(tenant, "/t/atomic", { tag: "x", amount: 1 }, key);
    } catch {
      return;
    }
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ type: expect.stringMatching(/idempotency-key-(invalid|missing)/) });
    const n = await count(
      database().sql<
        { count: number }[]
      >`select count(*)::int as count from idempotency_keys where tenant_id = ${tenant.id} and key = ${key}`,
    );
    expect(n).toBe(0);
  });

  it("accepts every visible ASCII character and 255 of them", async () => {
    const visible = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join("");
    for (const key of [visible, "k".repeat(255), "!"]) {
      const res = await post(
        tenant,
        "/t/atomic",
        { tag: uniqueKey("ascii"), amount: 1 },
        key + (key.length < 200 ? crypto.randomUUID() : ""),
      );
      expect(res.status).toBe(201);
    }
  });

  it("the IETF draft's quoted form names the same key as the bare form: one execution, the stored answer replayed", async () => {
    const key = uniqueKey("sf");
    const body = { tag: key, amount: 4 };
    const bare = await post(tenant, "/t/atomic", body, key);
    expect(bare.status).toBe(201);
    const quoted = await post(tenant, "/t/atomic", body, `"${key}"`);
    expect(quoted.status).toBe(201);
    expect(quoted.headers.get("idempotent-replayed")).toBe("true");
    expect(await quoted.text()).toBe(await bare.text());
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
    // An sf-string that does not hold a valid key is refused like the bare form would be.
    const spaced = await post(tenant, "/t/atomic", body, '"two words"');
    expect(spaced.status).toBe(400);
  });

  it.each([
    ["parameters", (k: string) => [`"${k}";a=1`, `"${k}";a=2`]],
    ["a boolean parameter", (k: string) => [`"${k}";p`]],
    ["a list of two strings", (k: string) => [`"${k}", "${k}x"`]],
    ["a list with a non-string member", (k: string) => [`"${k}", 1`]],
    ["an inner list", (k: string) => [`("${k}")`]],
    ["a malformed sf-string", (k: string) => [`"${k}`, `"${k}"x`]],
  ])(
    "a structured field that is not one plain sf-string (%s): 400 naming why; nothing claimed, the plain key still free",
    async (_label, spell) => {
      const key = uniqueKey("sf-refused");
      const body = { tag: key, amount: 4 };
      for (const header of spell(key)) {
        const res = await post(tenant, "/t/atomic", body, header);
        expect(res.status, header).toBe(400);
        expect(await res.json()).toMatchObject({
          type: "/problems/idempotency-key-invalid",
          detail: expect.stringMatching(/Idempotency-Key header must (name one key|not carry|be one structured-field string)/),
        });
      }
      const n = await count(
        database().sql<
          { count: number }[]
        >`select count(*)::int as count from idempotency_keys where tenant_id = ${tenant.id} and key like ${`${key}%`}`,
      );
      expect(n).toBe(0);
      expect(await effectsFor(tenant.id, key)).toHaveLength(0);
      expect((await post(tenant, "/t/atomic", body, `"${key}"`)).status).toBe(201);
    },
  );

  it("a bare key is taken as sent, quotes and commas inside it included", async () => {
    for (const key of [`${uniqueKey("q")}a"b`, `${uniqueKey("c")},`]) {
      const res = await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key);
      expect(res.status, key).toBe(201);
      expect(await effectsFor(tenant.id, key)).toHaveLength(1);
    }
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

  it("tRPC: the replay returns the same output; nothing runs again", async () => {
    const key = uniqueKey();
    const first = await (await caller(tenant, key)).atomic({ tag: key, amount: 7 });
    const second = await (await caller(tenant, key)).atomic({ tag: key, amount: 7 });
    expect(second).toEqual(first);
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
  });

  it("a tRPC first call and a REST retry share one key and one result", async () => {
    const key = uniqueKey();
    const first = await (await caller(tenant, key)).atomic({ tag: key, amount: 3 });
    const res = await post(tenant, "/t/atomic", { tag: key, amount: 3 }, key);
    expect(res.headers.get("idempotent-replayed")).toBe("true");
    expect(await res.json()).toEqual(first);
  });

  it("equivalent JSON (key order, number spelling, defaults) is the same request", async () => {
    const key = uniqueKey();
    const first = await post(tenant, "/t/atomic", `{"tag":"${key}","amount":10,"extra":{"b":1,"a":[1,2]}}`, key);
    expect(first.status).toBe(201);
    const reordered = await post(
      tenant,
      "/t/atomic",
      `{ "extra": {"a":[1,2.0],"b":1e0}, "outcome":"ok", "amount": 10.0, "tag": "${key}" }`,
      key,
    );
    expect(reordered.status).toBe(201);
    expect(reordered.headers.get("idempotent-replayed")).toBe("true");
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
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
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
    const err = await trpcError((await caller(tenant, key)).atomic({ tag: key, amount: 250 }));
    expect(err.code).toBe("UNPROCESSABLE_CONTENT");
  });

  it("a different path with the same body: 422", async () => {
    const key = uniqueKey();
    expect((await post(tenant, "/t/atomic", { tag: key, amount: 5 }, key)).status).toBe(201);
    const res = await post(tenant, "/t/recoverable", { tag: key, amount: 5 }, key);
    expect(res.status).toBe(422);
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
  });

  it("the fingerprint is fixed by the first claim even when that attempt failed with a 5xx", async () => {
    const key = uniqueKey();
    const failed = await post(tenant, "/t/atomic", { tag: key, amount: 5, outcome: "boom" }, key);
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({ type: "/problems/internal", status: 500 });
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "in_progress", lease_expired: true });
    expect(await effectsFor(tenant.id, key)).toHaveLength(0);
    expect((await post(tenant, "/t/atomic", { tag: key, amount: 6 }, key)).status).toBe(422);
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

  it("an unexpected error releases the key: the retry runs the work and finishes it once", async () => {
    const key = uniqueKey();
    expect((await post(tenant, "/t/recoverable", { tag: key, amount: 5, outcome: "boom" }, key)).status).toBe(500);
    const row = await keyRow(tenant.id, key);
    expect(row).toMatchObject({ state: "in_progress", recovery_point: "settled", lease_expired: true });
    const retry = await post(tenant, "/t/recoverable", { tag: key, amount: 5 }, key);
    // The body changed ("boom" → "ok"): a new request under a used key is refused even after a 5xx.
    expect(retry.status).toBe(422);
    const same = await post(tenant, "/t/recoverable", { tag: key, amount: 5, outcome: "boom" }, key);
    expect(same.status).toBe(500);
    // Both phases were committed once by the first attempt and never again.
    expect((await effectsFor(tenant.id, key)).map((e) => e.note)).toEqual([`${key}:recorded`, `${key}:settled`]);
  });

  it("an unexpected error in an atomic handler leaves no business writes and lets the retry finish", async () => {
    const key = uniqueKey();
    const tag = key;
    const attempt = await post(tenant, "/t/atomic", { tag, amount: 9, outcome: "boom" }, key);
    expect(attempt.status).toBe(500);
    expect(await effectsFor(tenant.id, key)).toHaveLength(0);
    const retry = await post(tenant, "/t/atomic", { tag, amount: 9, outcome: "boom" }, key);
    expect(retry.status).toBe(500);
    expect(Number((await keyRow(tenant.id, key))!.fence)).toBe(2);
    expect(await effectsFor(tenant.id, key)).toHaveLength(0);
  });
});

describe("scope", () => {
  it("the same key from two tenants is two independent operations; neither sees the other's result", async () => {
    const other = await newTenant("other");
    const key = uniqueKey();
    const a = await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key);
    const b = await post(other, "/t/atomic", { tag: key, amount: 2 }, key);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get("idempotent-replayed")).toBeNull();
    const [ba, bb] = [await a.json(), await b.json()];
    expect(ba.id).not.toBe(bb.id);
    expect(bb.amount).toBe(2);
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
    expect(await effectsFor(other.id, key)).toHaveLength(1);
  });

  it("401 without a valid token, before any key is claimed", async () => {
    const key = uniqueKey();
    const res = await post({ ...tenant, token: "eo_wrong" }, "/t/atomic", { tag: key, amount: 1 }, key);
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const n = await count(database().sql<{ count: number }[]>`select count(*)::int as count from idempotency_keys where key = ${key}`);
    expect(n).toBe(0);
  });
});
