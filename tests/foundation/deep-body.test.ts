/**
 * Bounded work for every body: a JSON text nested deeper than 64 levels is a
 * 400 problem found in one linear pass, before authentication, parsing or
 * any walk over the value, at every entrance that reads a body (REST, tRPC,
 * the admin sign-in). The attack it answers: one anonymous 64 KiB body of
 * nested arrays (~32,000 levels) that used to cost time and memory with the
 * square of its depth and took the whole server down, while the health
 * check stalled behind it.
 */
import { describe, expect, it } from "vitest";
import { GET as health } from "../../app/api/health/route";
import { POST as trpcPost, GET as trpcGet } from "../../app/api/trpc/[trpc]/route";
import { app } from "../../server/app";
import { MAX_JSON_DEPTH, jsonShape } from "../../server/json-shape";
import { MAX_BODY_BYTES } from "../../server/rest/body";
import { PAYMENT } from "../payments/support";
import { api, newKey, newTenant } from "../support/api";

/** `[[[…0…]]]` as deep as fits in `bytes`. */
const nestedArrays = (bytes: number) => {
  const depth = Math.floor((bytes - 1) / 2);
  return `${"[".repeat(depth)}0${"]".repeat(depth)}`;
};

const DEEP = nestedArrays(MAX_BODY_BYTES);
const json = { "content-type": "application/json" };

describe("jsonShape", () => {
  it.each([
    ['{"a":1,"a":2}', "a"],
    ['{"a":{"b":1,"b":2}}', "a.b"],
    ['{"items":[{"s":1},{"s":1,"s":2}]}', "items.1.s"],
    ['{"a":1,"\\u0061":2}', "a"],
    ['{"a":"\\"a\\"","b":["a","a"],"c":{"a":1}}', undefined],
    ['{"x":[[{"k":1}],[{"k":2,"k":3}]]}', "x.1.0.k"],
  ])("%s: duplicate %s", (text, duplicate) => {
    expect(jsonShape(text)).toEqual(duplicate === undefined ? { tooDeep: false } : { tooDeep: false, duplicate });
  });

  it("allows 64 levels and refuses the 65th, counting arrays and objects alike", () => {
    const levels = (n: number) => `${'{"a":['.repeat(n / 2)}1${"]}".repeat(n / 2)}`;
    expect(jsonShape(levels(MAX_JSON_DEPTH)).tooDeep).toBe(false);
    expect(jsonShape(levels(MAX_JSON_DEPTH + 2)).tooDeep).toBe(true);
    // Brackets inside strings are text, not nesting.
    expect(jsonShape(JSON.stringify({ a: "[".repeat(10_000) })).tooDeep).toBe(false);
  });

  it("ends on text that is not JSON (an open string, a dangling escape) without throwing", () => {
    for (const text of ['{"a', '{"a\\', '{"a":"b', "[".repeat(10), '{"\\uZZZZ":1,"\\uZZZZ":2}'])
      expect(() => jsonShape(text)).not.toThrow();
  });
});

describe("a 64 KiB body of nested arrays", () => {
  it("is a 400 at REST before authentication, naming the rule", async () => {
    const res = await app.handleRest(
      new Request("http://test/api/v1/payments", { method: "POST", headers: { ...json, "idempotency-key": newKey() }, body: DEEP }),
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ type: "/problems/json-too-deep", errors: [{ field: "(body)" }] });
  });

  it("is a 400 when it hides in a field of an otherwise good payment, and nothing is claimed", async () => {
    const tenant = await newTenant("deep-field");
    const key = newKey("deep");
    const answer = await api(tenant).post("/v1/payments", `{"amount":"25.00","currency":"EUR","destination":${nestedArrays(60_000)}}`, key);
    expect(answer.status, answer.text).toBe(400);
    expect(answer.body.type).toBe("/problems/json-too-deep");
    expect((await api(tenant).get(`/v1/ledger?idempotencyKey=${key}`)).body).toEqual({ data: [] });
  });

  it("is a 400 as bytes that are not UTF-8 too, without walking it", async () => {
    const body = Buffer.concat([Buffer.from(DEEP.slice(0, -4)), Buffer.from([0xff]), Buffer.from("]]]")]);
    const res = await app.handleRest(
      new Request("http://test/api/v1/payments", { method: "POST", headers: { ...json, "idempotency-key": newKey() }, body }),
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { type: string }).type).toBe("/problems/invalid-utf8");
  });

  it("is a 400 over tRPC (a POST body, and a GET input in the query)", async () => {
    const post = await trpcPost(new Request("http://app.test/api/trpc/checkout.pay", { method: "POST", headers: json, body: DEEP }));
    expect(post.status).toBe(400);
    expect(await post.text()).toContain("json-too-deep");
    const input = encodeURIComponent(nestedArrays(8_000));
    const get = await trpcGet(new Request(`http://app.test/api/trpc/checkout.keyStatus?input=${input}`));
    expect(get.status).toBe(400);
    expect(await get.text()).toContain("json-too-deep");
  });

  it("is a 400 at the admin sign-in, with no credential", async () => {
    const res = await app.adminSessionRoutes.signIn(
      new Request("http://app.test/admin/session", {
        method: "POST",
        headers: { ...json, host: "app.test", origin: "http://app.test" },
        body: DEEP,
      }),
    );
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("json-too-deep");
  });

  it(
    "costs milliseconds: ten of them in a row leave the health check answering, and a payment still goes through",
    { timeout: 20_000 },
    async () => {
      const deepOnes = Array.from({ length: 10 }, () =>
        app.handleRest(
          new Request("http://test/api/v1/payments", { method: "POST", headers: { ...json, "idempotency-key": newKey() }, body: DEEP }),
        ),
      );
      // Asked while all ten are being read and checked on this one thread.
      const askedAt = performance.now();
      const healthy = await health();
      const healthMs = performance.now() - askedAt;
      const statuses = (await Promise.all(deepOnes)).map((r) => r.status);
      const allMs = performance.now() - askedAt;
      expect(statuses).toEqual(Array(10).fill(400));
      expect(healthy.status).toBe(200);
      // The quadratic scanner took seconds for one such body (and ran out of memory on a server); these bounds are 100x that line.
      expect(healthMs, "health answered while the deep bodies were read").toBeLessThan(2_000);
      expect(allMs, "ten deep bodies refused").toBeLessThan(5_000);
      const paid = await api(await newTenant("deep-after")).post("/v1/payments", PAYMENT, newKey());
      expect(paid.status, paid.text).toBe(201);
    },
  );
});
