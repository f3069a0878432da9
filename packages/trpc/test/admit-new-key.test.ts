/**
 * The runtime's `admitNewKey`: the app's say on a new key (a cap on the keys
 * a scope holds, say), asked only when a call would insert a key row its
 * scope does not hold (none, or an expired one). A key it holds behaves as
 * without the hook: a replay (also after a wrong `Idempotency-Attempt: 1`),
 * a wait that ends in `409`, a takeover. Counted in hook calls, handler runs
 * and rows, on both flavours.
 */
import { TRPCError } from "@trpc/server";
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { IDEMPOTENCY_ATTEMPT_HEADER, type IdempotencyContext } from "../src/index.js";
import {
  effectsOf,
  FLAVOURS,
  fresh,
  hooks,
  keyRow,
  ONE_EXECUTION,
  openDatabase,
  park,
  post,
  serve,
  type Flavour,
  type Served,
} from "./harness.js";

/** Keys the hook was asked about, and those it refuses. */
const asked: string[] = [];
const refusing = new Set<string>();

function admitNewKey(request: IdempotencyContext) {
  const key = request.headers.get("idempotency-key")!;
  asked.push(key);
  if (refusing.has(key)) throw new TRPCError({ code: "TOO_MANY_REQUESTS", message: "A test cap." });
}

let sql: Sql;
let app: Served;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql, { waitMs: 0 }, { admitNewKey });
});
afterAll(async () => {
  await app?.close();
  await sql?.end({ timeout: 5 });
});

const send = (procedure: Flavour, key: string, extra: Record<string, string> = {}) =>
  post(app.base, procedure, key, { tag: key, amount: 1 }, extra);
const askedAbout = (key: string) => asked.filter((k) => k === key).length;

describe.each(FLAVOURS)("admitNewKey on $flavour ($procedure)", ({ procedure }) => {
  it("is asked for a new key; its refusal is the answer, and nothing is claimed or run", async () => {
    const key = fresh("refused");
    refusing.add(key);
    for (const extra of [{}, { [IDEMPOTENCY_ATTEMPT_HEADER]: "1" }] as Record<string, string>[]) {
      const res = await send(procedure, key, extra);
      expect(res.status).toBe(429);
      expect(JSON.parse(res.body)).toMatchObject({ error: { message: "A test cap.", data: { code: "TOO_MANY_REQUESTS" } } });
    }
    expect(askedAbout(key)).toBe(2);
    expect(await keyRow(sql, key)).toBeUndefined();
    expect(await effectsOf(sql, key)).toEqual({});
  });

  it("is not asked for a key the scope holds: a retry gets the stored answer, also after a wrong first-send header", async () => {
    const key = fresh("held");
    const first = await send(procedure, key);
    expect(first.status).toBe(200);
    expect(askedAbout(key)).toBe(1);
    refusing.add(key);
    for (const extra of [{}, { [IDEMPOTENCY_ATTEMPT_HEADER]: "1" }] as Record<string, string>[]) {
      expect(await send(procedure, key, extra)).toEqual({ ...first, replayed: true });
    }
    // The wrong first send was asked (it said it holds nothing), refused, and then looked: the key answered.
    expect(askedAbout(key)).toBe(2);
    expect(await effectsOf(sql, key)).toEqual(ONE_EXECUTION[procedure]);
  });

  // An atomic first attempt writes its row only when it commits: until then its key is held by nobody, and a
  // duplicate is a new key to the hook as to the table (it would run, then lose at the primary key).
  it.skipIf(procedure === "deposit")(
    "is not asked while another request holds the key: the duplicate gets 409, as without the hook",
    async () => {
      const key = fresh("in-progress");
      const parked = park(key, "between");
      const first = send(procedure, key);
      await parked.entered;
      refusing.add(key);
      const duplicate = await send(procedure, key);
      expect(duplicate.status).toBe(409);
      expect(JSON.parse(duplicate.body)).toMatchObject({ error: { data: { code: "CONFLICT" } } });
      parked.release();
      expect((await first).status).toBe(200);
      expect(askedAbout(key)).toBe(1);
      expect(await effectsOf(sql, key)).toEqual(ONE_EXECUTION[procedure]);
      hooks.delete(key);
    },
  );

  it("is not asked for a takeover of a stale key, and is asked for an expired one it replaces", async () => {
    const stale = fresh("stale");
    expect((await send(procedure, stale)).status).toBe(200);
    await sql`update idempotency_keys set state = 'in_progress', locked_until = now() - interval '1 second', response_status = null, response_body = null
      where tenant_id = 't1' and key = ${stale}`;
    refusing.add(stale);
    expect(await send(procedure, stale)).toMatchObject({ status: 200, replayed: false });
    expect(askedAbout(stale)).toBe(1);

    const expired = fresh("expired");
    expect((await send(procedure, expired)).status).toBe(200);
    await sql`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = 't1' and key = ${expired}`;
    refusing.add(expired);
    expect((await send(procedure, expired)).status).toBe(429);
    expect(askedAbout(expired)).toBe(2);
    // Refused before anything was written: the expired row is as it was.
    expect(await effectsOf(sql, expired)).toEqual(ONE_EXECUTION[procedure]);
    const [row] = await sql<
      { expired: boolean }[]
    >`select expires_at <= now() as expired from idempotency_keys where tenant_id = 't1' and key = ${expired}`;
    expect(row!.expired).toBe(true);
  });
});
