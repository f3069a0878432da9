/**
 * The decision table (README's "What a retry gets"), over HTTP, for both
 * flavours: each row's answer, and what ran in the database behind it.
 */
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { effectsOf, executions, FLAVOURS, fresh, ONE_EXECUTION, openDatabase, post, serve, type Served } from "./harness.js";

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

describe.each(FLAVOURS)("$flavour ($procedure)", ({ procedure }) => {
  it("the same key again: the stored answer, byte for byte, and nothing runs again", async () => {
    const tag = fresh("replay");
    const first = await post(app.base, procedure, tag, { tag, amount: 100 });
    const again = await post(app.base, procedure, tag, { tag, amount: 100 });
    expect(first).toMatchObject({ status: 200, replayed: false });
    expect(again).toEqual({ ...first, replayed: true });
    expect(await effectsOf(sql, tag)).toEqual(ONE_EXECUTION[procedure]);
    expect(executions.get(tag)).toBe(1);
  });

  it("the same key with another input: 422, nothing runs", async () => {
    const tag = fresh("mismatch");
    expect((await post(app.base, procedure, tag, { tag, amount: 100 })).status).toBe(200);
    const changed = await post(app.base, procedure, tag, { tag, amount: 101 });
    expect(changed.status).toBe(422);
    expect(await effectsOf(sql, tag)).toEqual(ONE_EXECUTION[procedure]);
    expect(executions.get(tag)).toBe(1);
  });

  it("no key, or one that breaks the key rules: 400 before anything is claimed or run", async () => {
    const tag = fresh("bad-key");
    // A key outside 1–255 visible ASCII characters (é is one byte of Latin-1 on the wire, which fetch can send).
    for (const key of [undefined, "", "x".repeat(256), "caf\u00e9-key"]) {
      const answer = await post(app.base, procedure, key, { tag, amount: 100 });
      expect(answer.status, JSON.stringify(key)).toBe(400);
    }
    expect(executions.get(tag)).toBeUndefined();
    expect(await effectsOf(sql, tag)).toEqual({});
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys where key = ''`;
    expect(row!.n).toBe(0);
  });

  it("one key under two scopes: two operations, neither sees the other's answer", async () => {
    const tag = fresh("scope");
    const one = await post(app.base, procedure, tag, { tag, amount: 100 }, { "x-tenant": "t1" });
    const other = await post(app.base, procedure, tag, { tag, amount: 100 }, { "x-tenant": "t2" });
    expect([one.status, other.status]).toEqual([200, 200]);
    expect(other.replayed).toBe(false);
    expect(other.body).not.toBe(one.body);
    expect(executions.get(tag)).toBe(2);
    expect(await effectsOf(sql, tag, "t1")).toEqual(ONE_EXECUTION[procedure]);
    expect(await effectsOf(sql, tag, "t2")).toEqual(ONE_EXECUTION[procedure]);
  });

  it("a final refusal (4xx) after the claim is stored: a retry gets it back and nothing runs", async () => {
    const tag = fresh("refused");
    const first = await post(app.base, procedure, tag, { tag, amount: 100, outcome: "refuse" });
    const again = await post(app.base, procedure, tag, { tag, amount: 100, outcome: "refuse" });
    expect([first.status, again.status]).toEqual([403, 403]);
    expect(again.replayed).toBe(true);
    expect(executions.get(tag)).toBe(1);
    const [row] = await sql<{ state: string; response_status: number }[]>`
      select state, response_status from idempotency_keys where key = ${tag}`;
    expect({ ...row }).toEqual({ state: "failed", response_status: 403 });
  });

  it("a failure whose effect is unknown (5xx) is not stored: the key is released and a retry runs again", async () => {
    const tag = fresh("boom");
    const first = await post(app.base, procedure, tag, { tag, amount: 100, outcome: "boom" });
    const again = await post(app.base, procedure, tag, { tag, amount: 100, outcome: "boom" });
    expect([first.status, again.status]).toEqual([500, 500]);
    expect(again.replayed).toBe(false);
    expect(executions.get(tag)).toBe(2);
    expect(await effectsOf(sql, tag)).toEqual({});
  });
});
