/**
 * What names a key and what makes two requests the same: the Idempotency-Key
 * header's rules (visible ASCII, 1–255, the IETF draft's structured-field
 * string), the fingerprint (equivalent JSON is one request; another body or
 * another procedure is not, even after a 5xx), and what an unexpected error
 * leaves. Checked in the database, not only in the answers.
 */
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { caller, createApp, effectsOf, fresh, keyRow, openDatabase, post, serve, type Served } from "./harness.js";
import { trpcError } from "./waiting.js";

let sql: Sql;
let app: Served;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql);
});
afterAll(async () => {
  await app?.close();
  await sql?.end({ timeout: 5 });
});

const keyRows = async (pattern: string) =>
  (await sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys where tenant_id = 't1' and key like ${pattern}`)[0]!.n;

describe("the Idempotency-Key header", () => {
  it.each([
    ["empty", ""],
    ["too long", "k".repeat(256)],
    ["a space inside", "two words"],
    ["a tab inside", "tab\there"],
    ["non-ASCII", "schlüssel"],
    ["a control character", "a\u0001b"],
  ])("invalid (%s): 400, nothing stored", async (_label, key) => {
    const tag = fresh("invalid");
    // fetch refuses some of these outright; no HTTP client could send them either.
    const answer = await post(app.base, "deposit", key, { tag, amount: 1 }).catch(() => undefined);
    if (!answer) return;
    expect(answer.status).toBe(400);
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys where tenant_id = 't1' and key = ${key}`;
    expect(row!.n).toBe(0);
    expect(await effectsOf(sql, tag)).toEqual({});
  });

  it("accepts every visible ASCII character and 255 of them", async () => {
    const visible = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join("");
    for (const key of [visible, "k".repeat(255), "!"]) {
      const answer = await post(app.base, "deposit", key + (key.length < 200 ? crypto.randomUUID() : ""), {
        tag: fresh("ascii"),
        amount: 1,
      });
      expect(answer.status).toBe(200);
    }
  });

  it("the IETF draft's quoted form names the same key as the bare form: one execution, the stored answer replayed", async () => {
    const key = fresh("sf");
    const body = { tag: key, amount: 4 };
    const bare = await post(app.base, "deposit", key, body);
    expect(bare.status).toBe(200);
    expect(await post(app.base, "deposit", `"${key}"`, body)).toEqual({ ...bare, replayed: true });
    expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
    // An sf-string that does not hold a valid key is refused like the bare form would be.
    expect((await post(app.base, "deposit", '"two words"', body)).status).toBe(400);
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
      const key = fresh("sf-refused");
      const body = { tag: key, amount: 4 };
      for (const header of spell(key)) {
        const answer = await post(app.base, "deposit", header, body);
        expect(answer.status, header).toBe(400);
        expect(JSON.parse(answer.body)).toMatchObject({
          error: { message: expect.stringMatching(/Idempotency-Key header must (name one key|not carry|be one structured-field string)/) },
        });
      }
      expect(await keyRows(`${key}%`)).toBe(0);
      expect(await effectsOf(sql, key)).toEqual({});
      expect((await post(app.base, "deposit", `"${key}"`, body)).status).toBe(200);
    },
  );

  it("a bare key is taken as sent, quotes and commas inside it included", async () => {
    for (const key of [`${fresh("q")}a"b`, `${fresh("c")},`]) {
      expect((await post(app.base, "deposit", key, { tag: key, amount: 1 })).status, key).toBe(200);
      expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
    }
  });
});

describe("one request or another", () => {
  it("equivalent JSON (key order, number spelling, defaults) is the same request", async () => {
    const key = fresh("equivalent");
    const first = await post(app.base, "deposit", key, `{"tag":"${key}","amount":10,"extra":{"b":1,"a":[1,2]}}`);
    expect(first.status).toBe(200);
    const reordered = await post(
      app.base,
      "deposit",
      key,
      `{ "extra": {"a":[1,2.0],"b":1e0}, "outcome":"ok", "amount": 10.0, "tag": "${key}" }`,
    );
    expect(reordered).toEqual({ ...first, replayed: true });
    expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
  });

  it("a different body: 422, nothing runs, the stored result is not shown", async () => {
    const key = fresh("other-body");
    const first = await post(app.base, "deposit", key, { tag: key, amount: 25 });
    const { effectId } = (JSON.parse(first.body) as { result: { data: { effectId: number } } }).result.data;
    const changed = await post(app.base, "deposit", key, { tag: key, amount: 250 });
    expect(changed.status).toBe(422);
    expect(changed.body).not.toContain(`"effectId":${effectId}`);
    expect(changed.body).not.toContain('"amount":25');
    expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
    const error = await trpcError(caller(createApp(sql), key).deposit({ tag: key, amount: 250 }));
    expect(error.code).toBe("UNPROCESSABLE_CONTENT");
  });

  it("another procedure with the same body: 422", async () => {
    const key = fresh("other-procedure");
    expect((await post(app.base, "deposit", key, { tag: key, amount: 5 })).status).toBe(200);
    expect((await post(app.base, "pay", key, { tag: key, amount: 5 })).status).toBe(422);
    expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
  });

  it("the fingerprint is fixed by the first claim even when that attempt failed with a 5xx", async () => {
    const key = fresh("fixed");
    expect((await post(app.base, "deposit", key, { tag: key, amount: 5, outcome: "late-boom" })).status).toBe(500);
    expect(await keyRow(sql, key)).toMatchObject({ state: "in_progress", lease_expired: true });
    expect(await effectsOf(sql, key)).toEqual({});
    expect((await post(app.base, "deposit", key, { tag: key, amount: 6 })).status).toBe(422);
  });
});

describe("an unexpected error", () => {
  it("after a recoverable handler's phases releases the key, keeping them: a retry of the same request runs again without redoing them", async () => {
    const key = fresh("released");
    expect((await post(app.base, "pay", key, { tag: key, amount: 5, outcome: "late-boom" })).status).toBe(500);
    expect(await keyRow(sql, key)).toMatchObject({ state: "in_progress", recovery_point: "charged", lease_expired: true });
    // The body changed ("late-boom" → "ok"): a new request under a used key is refused even after a 5xx.
    expect((await post(app.base, "pay", key, { tag: key, amount: 5 })).status).toBe(422);
    expect((await post(app.base, "pay", key, { tag: key, amount: 5, outcome: "late-boom" })).status).toBe(500);
    // Both phases were committed once by the first attempt and never again.
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
  });

  it("in an atomic handler after its write leaves no write behind, and the retry takes the key again", async () => {
    const key = fresh("rolled-back");
    expect((await post(app.base, "deposit", key, { tag: key, amount: 9, outcome: "late-boom" })).status).toBe(500);
    expect(await effectsOf(sql, key)).toEqual({});
    expect((await post(app.base, "deposit", key, { tag: key, amount: 9, outcome: "late-boom" })).status).toBe(500);
    expect(Number((await keyRow(sql, key))!.fence)).toBe(2);
    expect(await effectsOf(sql, key)).toEqual({});
  });
});
