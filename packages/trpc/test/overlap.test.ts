/**
 * Two attempts on one key at once, each ordering forced by holding one at a
 * chosen point: an atomic duplicate that commits first wins and the other's
 * work rolls back; two atomic INSERTs meet at the unique index; a wait over
 * budget is a 409 whose Retry-After is what the holder's lease still runs;
 * the two flavours exclude each other; a key row committed after the
 * acquisition read the key is not overwritten; and a replay writes nothing.
 */
import type { TRPCError } from "@trpc/server";
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { fingerprint } from "../src/index.js";
import { caller, createApp, effectsOf, fresh, hooks, keyRow, openDatabase, park, post, recorder, serve, type Served } from "./harness.js";
import { barrier, until } from "./waiting.js";

const WAITING = { waitMs: 5_000 };
const log = recorder();
let sql: Sql;
/** Duplicates wait for the holder up to 5 s; `noWait`'s answer at once. */
let app: Served;
let noWait: Served;
let direct: ReturnType<typeof createApp>;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql, WAITING, { onEvent: log.onEvent });
  noWait = await serve(sql, { waitMs: 0 });
  direct = createApp(sql, WAITING);
});
afterAll(async () => {
  await app?.close();
  await noWait?.close();
  await sql?.end({ timeout: 5 });
});

const dataOf = (body: string) => (JSON.parse(body) as { result: { data: unknown } }).result.data;

describe("one key, attempts at once", () => {
  it("a duplicate arriving while the first atomic attempt runs: the first to commit its key row wins, the other's work rolls back and it replays; one effect", async () => {
    for (let i = 0; i < 5; i++) {
      const key = fresh("overtake");
      const hold = park(key, "after-write");
      const first = caller(direct, key).deposit({ tag: key, amount: 1 });
      await hold.entered;
      // The first has written its effect but not its key row (that comes with its COMMIT): the duplicate runs and commits.
      const second = await post(app.base, "deposit", key, { tag: key, amount: 1 });
      expect(second).toMatchObject({ status: 200, replayed: false });
      hold.release();
      // The first's INSERT meets the duplicate's row: its transaction, effect included, rolls back, and it replays.
      expect(await first).toEqual(dataOf(second.body));
      expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
      hooks.delete(key);
    }
  });

  it("two duplicates that both reach the key row's INSERT: one commits, the other waits at the unique index and replays it; its own work rolls back", async () => {
    for (let i = 0; i < 5; i++) {
      const key = fresh("bothinsert");
      // Both attempts run their handler (the effect written) and stop just before the INSERT + COMMIT round trip.
      const ready = barrier(2);
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let arrived = 0;
      hooks.set(key, async (point) => {
        if (point !== "after-write") return;
        arrived += 1;
        await ready();
        await gate;
      });
      const both = [post(app.base, "deposit", key, { tag: key, amount: 1 }), post(app.base, "deposit", key, { tag: key, amount: 1 })];
      // Each handler wrote its effect in its own open transaction: both ran, neither is committed.
      await until(() => arrived === 2);
      release();
      // One INSERT commits; the other waits at the unique index for that transaction, then fails.
      const answers = await Promise.all(both);
      expect(answers.map((r) => r.status)).toEqual([200, 200]);
      expect(answers.map((r) => r.replayed).sort()).toEqual([false, true]);
      expect(answers[0]!.body).toBe(answers[1]!.body);
      // ...and nothing of it commits: one effect, one key row at fence 1.
      expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
      expect(await keyRow(sql, key)).toMatchObject({ state: "completed", fence: "1" });
      // The loser answered as a replay of the winner's row.
      expect(log.of(key).filter((e) => e.type === "replayed")).toHaveLength(1);
      hooks.delete(key);
    }
  });

  it("over the wait budget: 409 whose Retry-After is what the holder's lease still runs", async () => {
    const key = fresh("retryafter");
    // The holder commits its claim (a 30 s lease) and stops between its phases.
    const hold = park(key, "between");
    const first = post(noWait.base, "pay", key, { tag: key, amount: 1 });
    await hold.entered;
    const refused = await post(noWait.base, "pay", key, { tag: key, amount: 1 });
    expect(refused.status).toBe(409);
    // Derived from the lease (30 s from the claim, a moment ago), not a fixed second.
    expect(Number(refused.retryAfter)).toBeGreaterThan(20);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(30);
    hold.release();
    expect((await first).status).toBe(200);
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    hooks.delete(key);
  });

  it("the two flavours exclude each other on one key: a recoverable claim made while an atomic attempt runs wins, and the atomic attempt's work rolls back (422)", async () => {
    for (let i = 0; i < 5; i++) {
      const key = fresh("cross");
      const hold = park(key, "after-write");
      const atomic = caller(direct, key)
        .deposit({ tag: key, amount: 1 })
        .then(
          () => undefined,
          (error: TRPCError) => error,
        );
      await hold.entered;
      // The atomic attempt has no row yet (it writes one only with its COMMIT): the recoverable one claims the key and finishes.
      await caller(direct, key).pay({ tag: key, amount: 1 });
      hold.release();
      // Another procedure with the same key: a different request, so a mismatch; what the atomic attempt wrote is rolled back.
      expect((await atomic)?.code).toBe("UNPROCESSABLE_CONTENT");
      expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
      expect(await keyRow(sql, key)).toMatchObject({ state: "completed", fence: "1" });
      hooks.delete(key);
    }
  });

  it("an atomic attempt meeting a running recoverable one refuses without running", async () => {
    const key = fresh("cross2");
    const hold = park(key, "between");
    const recoverable = post(app.base, "pay", key, { tag: key, amount: 1 });
    await hold.entered;
    const atomic = await post(noWait.base, "deposit", key, { tag: key, amount: 1 });
    expect(atomic.status).toBe(422);
    hold.release();
    expect((await recoverable).status).toBe(200);
    expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
    hooks.delete(key);
  });
});

describe("a key row the acquisition could not see yet", () => {
  // The acquisition reads the row in the statement that takes the lock, so a
  // holder committing in between is missed. Played here by committing the
  // row from another connection while the handler runs: the take must fail
  // on it, roll the handler's writes back and answer from that row.
  it("fails the take, rolls back the handler's writes and replays the row it missed", async () => {
    const key = fresh("missed");
    const body = { tag: key, amount: 3 };
    const stored = { stored: "by the holder it missed" };
    hooks.set(key, async (point) => {
      if (point !== "after-write") return;
      await sql`
        insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, completed_at, expires_at)
        values ('t1', ${key}, 'deposit', ${fingerprint("deposit", { ...body, outcome: "ok" }).hash}, '', 'completed', 200,
                ${JSON.stringify(stored)}, now(), now() + interval '1 minute')`;
    });
    try {
      const res = await post(app.base, "deposit", key, body);
      expect(res).toMatchObject({ status: 200, replayed: true });
      expect(dataOf(res.body)).toEqual(stored);
      expect(await effectsOf(sql, key)).toEqual({});
      expect(await keyRow(sql, key)).toMatchObject({ state: "completed", fence: "1", response_body: JSON.stringify(stored) });
    } finally {
      hooks.delete(key);
    }
  });
});

describe("a replay writes nothing", () => {
  it("replays answer while another transaction holds the key row locked; each is reported as an event", async () => {
    for (const procedure of ["deposit", "pay"] as const) {
      const key = fresh("nowrite");
      const first = await post(app.base, procedure, key, { tag: key, amount: 3 });
      expect(first.status).toBe(200);
      // Any write to the key row on the request path would now wait for this lock (and fail after lock_timeout).
      const blocker = await sql.reserve();
      try {
        await blocker`begin`;
        await blocker`select 1 from idempotency_keys where tenant_id = 't1' and key = ${key} for update`;
        for (let i = 0; i < 3; i++)
          expect(await post(app.base, procedure, key, { tag: key, amount: 3 })).toEqual({ ...first, replayed: true });
      } finally {
        await blocker`rollback`;
        blocker.release();
      }
      // The count is the event sink's to keep (an app adds them up off the request path): the row is untouched.
      expect(log.of(key).filter((e) => e.type === "replayed")).toHaveLength(3);
      expect((await keyRow(sql, key))!.replay_count).toBe(0);
    }
  });
});
