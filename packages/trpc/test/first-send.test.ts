/**
 * `Idempotency-Attempt: 1`: the client says this is its first send of the
 * key, and the atomic flavour runs the handler without looking for a stored
 * answer first; the recoverable flavour sends its claim alone. A client that
 * says so wrongly must get exactly what a retry gets (the stored answer, a
 * mismatch, a replaced expired key), with an atomic handler's work rolled
 * back and a recoverable handler not run at all: counted here in rows,
 * handler runs and calls out.
 */
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { IDEMPOTENCY_ATTEMPT_HEADER } from "../src/index.js";
import {
  downstreamCallsOf,
  effectsOf,
  executions,
  fresh,
  hooks,
  keyRow,
  openDatabase,
  park,
  post,
  recorder,
  serve,
  type Flavour,
  type Input,
  type Served,
} from "./harness.js";
import { barrier, sleep } from "./waiting.js";

const log = recorder();
let sql: Sql;
let app: Served;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql, { waitMs: 5_000 }, { onEvent: log.onEvent });
});
afterAll(async () => {
  await app?.close();
  await sql?.end({ timeout: 5 });
});

const send = (key: string, body: Input, attempt?: string, procedure: Flavour = "deposit") =>
  post(app.base, procedure, key, body, attempt === undefined ? {} : { [IDEMPOTENCY_ATTEMPT_HEADER]: attempt });
const replays = (key: string) => log.of(key).filter((e) => e.type === "replayed").length;
/** The stored answer, as the body of a tRPC success carries it. */
const storedOf = (body: string) => JSON.stringify((JSON.parse(body) as { result: { data: unknown } }).result.data);
const expire = (key: string) =>
  sql`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = 't1' and key = ${key}`;

describe("a client's first send of a key (Idempotency-Attempt: 1)", () => {
  it("runs the handler once, stores its answer, and a retry replays it byte for byte without running it", async () => {
    const key = fresh("first");
    const first = await send(key, { tag: key, amount: 5 }, "1");
    expect(first).toMatchObject({ status: 200, replayed: false });
    const retry = await send(key, { tag: key, amount: 5 }, "2");
    expect(retry).toEqual({ ...first, replayed: true });
    expect(executions.get(key)).toBe(1);
    expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
    expect(await keyRow(sql, key)).toMatchObject({ state: "completed", response_body: storedOf(first.body) });
    expect(replays(key)).toBe(1);
  });

  it("on a key that already has its answer: the handler runs in vain, its write rolls back, and the stored answer is replayed", async () => {
    for (let i = 0; i < 10; i++) {
      const key = fresh(`wrong${i}`);
      const first = await send(key, { tag: key, amount: 5 }, "1");
      const again = await send(key, { tag: key, amount: 5 }, "1");
      expect(again).toEqual({ ...first, replayed: true });
      // Two runs: the look was left out; one effect: the second run's write did not commit.
      expect(executions.get(key)).toBe(2);
      expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
      expect(await keyRow(sql, key)).toMatchObject({ response_body: storedOf(first.body) });
      expect(replays(key)).toBe(1);
    }
  });

  it("only the value 1 leaves the look out: any other value, or none, replays without running the handler", async () => {
    const key = fresh("values");
    const first = await send(key, { tag: key, amount: 5 }, "1");
    for (const attempt of [undefined, "2", "01", "1, 1", "one", ""]) {
      expect(await send(key, { tag: key, amount: 5 }, attempt), `Idempotency-Attempt: ${attempt}`).toEqual({ ...first, replayed: true });
    }
    expect(executions.get(key)).toBe(1);
  });

  it("a stored refusal is replayed to a first send too, and the handler's write rolls back", async () => {
    const key = fresh("refused");
    const body = { tag: key, amount: 5, outcome: "late-refuse" } as const;
    const first = await send(key, body, "1");
    expect(first.status).toBe(403);
    expect(await send(key, body, "1")).toEqual({ ...first, replayed: true });
    expect(await effectsOf(sql, key)).toEqual({});
    expect(await keyRow(sql, key)).toMatchObject({ state: "failed", response_status: 403 });
    expect(replays(key)).toBe(1);
  });

  it("another request's key: 422, and nothing of the first send commits", async () => {
    const key = fresh("mismatch");
    await send(key, { tag: key, amount: 5 }, "1");
    expect((await send(key, { tag: key, amount: 6 }, "1")).status).toBe(422);
    expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
  });

  it("an expired key is replaced: the first send runs and its answer is stored in place of the old one", async () => {
    const key = fresh("expired");
    const old = await send(key, { tag: key, amount: 5 }, "1");
    await expire(key);
    const renewed = await send(key, { tag: key, amount: 7 }, "1");
    expect(renewed).toMatchObject({ status: 200, replayed: false });
    expect(renewed.body).not.toBe(old.body);
    // The first run on the expired key met its row at the INSERT and rolled back; the locking way replaced it and ran again.
    expect(executions.get(key)).toBe(3);
    expect(await effectsOf(sql, key)).toEqual({ deposit: 2 });
    expect(await keyRow(sql, key)).toMatchObject({ state: "completed", response_body: storedOf(renewed.body) });
  });

  it("two first sends whose handlers have both written: one commits, the other waits at the unique index and replays it", async () => {
    for (let i = 0; i < 20; i++) {
      const key = fresh(`race${i}`);
      // Both handlers write, then wait for each other: both transactions are open when the INSERTs go out.
      const written = barrier(2);
      hooks.set(key, async (point) => {
        if (point === "after-write") await written();
      });
      const answers = await Promise.all([send(key, { tag: key, amount: 5 }, "1"), send(key, { tag: key, amount: 5 }, "1")]);
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      expect(answers.filter((a) => a.replayed)).toHaveLength(1);
      expect(answers[0]!.body).toBe(answers[1]!.body);
      expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
      expect(await keyRow(sql, key)).toMatchObject({ state: "completed", response_body: storedOf(answers[0]!.body) });
      expect(replays(key)).toBe(1);
      hooks.delete(key);
    }
  });
});

describe("a recoverable first send (Idempotency-Attempt: 1): the claim alone", () => {
  const sendRecoverable = (key: string, body: Input, attempt?: string) => send(key, body, attempt, "pay");
  const callsOut = async (tag: string) => (await downstreamCallsOf(sql, tag)).length;

  it("claims the key, runs once, and a retry replays the answer byte for byte", async () => {
    const key = fresh("rec-first");
    const first = await sendRecoverable(key, { tag: key, amount: 5 }, "1");
    expect(first).toMatchObject({ status: 200, replayed: false });
    expect(await sendRecoverable(key, { tag: key, amount: 5 }, "2")).toEqual({ ...first, replayed: true });
    expect(await callsOut(key)).toBe(1);
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    expect(await keyRow(sql, key)).toMatchObject({ state: "completed", response_body: storedOf(first.body) });
    expect(replays(key)).toBe(1);
  });

  it("on a key that already has its answer: the claim finds the row, the handler does not run, the answer is replayed", async () => {
    for (let i = 0; i < 10; i++) {
      const key = fresh(`rec-wrong${i}`);
      const first = await sendRecoverable(key, { tag: key, amount: 5 }, "1");
      expect(await sendRecoverable(key, { tag: key, amount: 5 }, "1")).toEqual({ ...first, replayed: true });
      expect(await callsOut(key)).toBe(1);
      expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    }
  });

  it("another request's key: 422, and nothing runs", async () => {
    const key = fresh("rec-mismatch");
    await sendRecoverable(key, { tag: key, amount: 5 }, "1");
    expect((await sendRecoverable(key, { tag: key, amount: 6 }, "1")).status).toBe(422);
    expect(await callsOut(key)).toBe(1);
  });

  it("an expired key is replaced: the first send runs under a new generation", async () => {
    const key = fresh("rec-expired");
    const old = await sendRecoverable(key, { tag: key, amount: 5 }, "1");
    await expire(key);
    const renewed = await sendRecoverable(key, { tag: key, amount: 7 }, "1");
    expect(renewed).toMatchObject({ status: 200, replayed: false });
    expect(renewed.body).not.toBe(old.body);
    const calls = await downstreamCallsOf(sql, key);
    expect(calls).toHaveLength(2);
    expect(calls[0]).not.toBe(calls[1]);
  });

  it("a second first send while the first holds the key: its claim fails, it waits for the holder and replays", async () => {
    for (let i = 0; i < 5; i++) {
      const key = fresh(`rec-race${i}`);
      const hold = park(key, "between");
      const first = sendRecoverable(key, { tag: key, amount: 5 }, "1");
      await hold.entered;
      // The first holds the key (claimed, its phase committed) while the second sends its claim.
      const second = sendRecoverable(key, { tag: key, amount: 5 }, "1");
      await sleep(150);
      hold.release();
      const answers = await Promise.all([first, second]);
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      expect(answers.map((a) => a.replayed)).toEqual([false, true]);
      expect(answers[1]!.body).toBe(answers[0]!.body);
      expect(await callsOut(key)).toBe(1);
      expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    }
  });
});
