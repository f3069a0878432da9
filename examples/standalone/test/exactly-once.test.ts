/**
 * The example against a real PostgreSQL, through HTTP as a client sees it:
 * - a burst of 20 duplicates of a deposit behind a barrier (a table lock
 *   the test holds until the first request waits on it and the 19 others on
 *   its key, all in PostgreSQL): one deposit, 20 byte-identical answers;
 * - the same key with another amount: 422, nothing written;
 * - a business refusal (403) is stored: a retry gets the same answer back;
 * - a process killed between its recovery point and the end (its charge
 *   went out, the answer never came back): the completer finishes it, calling
 *   the provider again with the same downstream key (one charge), and a
 *   client's retry afterwards gets the stored answer;
 * - `npm start` (src/main.ts) as a process of its own: it serves on
 *   loopback, a payment's retry is a replay, and Ctrl-C stops it only once
 *   the payment in flight has answered, a second Ctrl-C meanwhile
 *   notwithstanding (exit 0).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createCompleter, migrate } from "@exactly-once/trpc";
import postgres, { type Sql } from "postgres";
import { CLOSED_ACCOUNT, createApp, createTables, databaseProvider } from "../src/app.js";
import { createServer } from "../src/server.js";
import { startDatabase, type TestDatabase } from "./database.js";

const LEASE_MS = 1_000;
let db: TestDatabase;
let sql: Sql;
let base: string;
let stop: () => Promise<void>;
const post = (procedure: "deposit" | "pay", key: string, input: unknown) =>
  fetch(`${base}/${procedure}`, {
    method: "POST",
    headers: { "content-type": "application/json", "Idempotency-Key": key },
    body: JSON.stringify(input),
  });

const transfersFor = async (key: string) => (await sql`select count(*)::int as n from transfers where key = ${key}`)[0]!.n as number;
/** The provider's charges for a downstream key derived from `key` (it starts with neither), and how often it was called for them. */
const chargesFor = async (key: string) => {
  const [row] = await sql`select count(*)::int as charges, coalesce(sum(c.calls), 0)::int as calls from provider_charges c
    join transfers t on t.charge_id = 'ch_' || left(c.key, 12) where t.key = ${key}`;
  return { ...row };
};

/** How many of this database's sessions wait on a lock, once `expected` of them do (or after 10 s). */
async function lockWaiters(expected: number): Promise<number> {
  let waiting = 0;
  for (let i = 0; i < 200 && waiting < expected; i++) {
    await new Promise((r) => setTimeout(r, 50));
    [{ n: waiting }] =
      await sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
  }
  return waiting;
}

before(async () => {
  db = await startDatabase();
  sql = postgres(db.url, { max: 30, onnotice: () => {} });
  await migrate(sql);
  await createTables(sql);
  const server = createServer(createApp(sql, databaseProvider(sql), { leaseMs: LEASE_MS }).router);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stop = () => new Promise((resolve) => server.close(() => resolve()));
});

after(async () => {
  await stop?.();
  await sql?.end({ timeout: 5 });
  await db?.dispose();
});

describe("the example, exactly once", () => {
  it("a burst of 20 duplicates: one execution, 20 identical answers", async () => {
    const key = `burst-${Date.now()}`;
    const barrier = await sql.reserve();
    await barrier`begin`;
    await barrier`lock table deposits in exclusive mode`;
    const pending = Promise.all(Array.from({ length: 20 }, () => post("deposit", key, { account: "acct_1", amount: 2500 })));
    try {
      assert.equal(await lockWaiters(20), 20, "the first request waits on the table, 19 duplicates on its key");
    } finally {
      await barrier`commit`;
      barrier.release();
    }
    const responses = await pending;
    const bodies = await Promise.all(responses.map((r) => r.text()));
    assert.deepEqual(
      responses.map((r) => r.status),
      Array(20).fill(200),
    );
    assert.equal(new Set(bodies).size, 1, "every answer is byte-identical");
    assert.equal(responses.filter((r) => r.headers.get("idempotent-replayed") === "true").length, 19);
    const [row] = await sql`select count(*)::int as n from deposits where key = ${key}`;
    assert.equal(row!.n, 1);
  });

  it("the same key with another request: 422, nothing runs", async () => {
    const key = `mismatch-${Date.now()}`;
    assert.equal((await post("pay", key, { amount: 1000, to: "acct_2" })).status, 200);
    const mismatch = await post("pay", key, { amount: 9999, to: "acct_2" });
    assert.equal(mismatch.status, 422);
    assert.equal(await transfersFor(key), 1);
    const [row] = await sql`select amount from transfers where key = ${key}`;
    assert.equal(row!.amount, 1000);
  });

  it("a business refusal is final: stored, and a retry gets the same error back", async () => {
    const key = `refused-${Date.now()}`;
    const first = await post("pay", key, { amount: 500, to: CLOSED_ACCOUNT });
    const again = await post("pay", key, { amount: 500, to: CLOSED_ACCOUNT });
    assert.deepEqual([first.status, again.status], [403, 403]);
    // tRPC adds the stack where it was thrown outside production (NODE_ENV); everything else is the same.
    const withoutStack = async (r: Response) => {
      const body = (await r.json()) as { error: { data: { stack?: string } } };
      delete body.error.data.stack;
      return body;
    };
    assert.deepEqual(await withoutStack(again), await withoutStack(first));
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    const [row] = await sql`select state, response_status from idempotency_keys where key = ${key}`;
    assert.deepEqual({ ...row }, { state: "failed", response_status: 403 });
  });

  it("a process killed after its recovery point: the completer finishes it once, a later retry replays", async () => {
    const key = `crash-${Date.now()}`;
    const child = spawn(process.execPath, ["--import", "tsx", "test/crash-child.ts", db.url, key], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    for (let i = 0; i < 300 && !out.includes("charged"); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(out.includes("charged"), "the child reached its provider call");
    child.kill("SIGKILL");
    await once(child, "exit");

    const [row] = await sql`select recovery_point, state from idempotency_keys where key = ${key}`;
    assert.deepEqual({ ...row }, { recovery_point: "recorded", state: "in_progress" });

    const app = createApp(sql, databaseProvider(sql), { leaseMs: LEASE_MS });
    const completer = createCompleter({
      sql: () => sql,
      procedures: ["pay"],
      rerun: (due, call) => app.createCaller({ tenant: { id: due.tenantId }, ...call }).pay(due.input as never),
    });
    await new Promise((r) => setTimeout(r, LEASE_MS + 200));
    const outcomes = await completer.completeDueKeys({ key });
    assert.deepEqual(
      outcomes.map((o) => o.outcome),
      ["completed"],
    );

    const retry = await post("pay", key, { amount: 2500, to: "acct_crash" });
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get("idempotent-replayed"), "true");
    assert.equal(((await retry.json()) as { result: { data: { amount: number } } }).result.data.amount, 2500);
    assert.equal(await transfersFor(key), 1, "the first phase ran once");
    // The provider was called twice (the child's call and the resumed one) with one downstream key: one charge.
    assert.deepEqual(await chargesFor(key), { charges: 1, calls: 2 });
  });

  it("npm start: serves on loopback, a retry replays, and Ctrl-C lets the payment in flight answer, a second Ctrl-C notwithstanding", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      env: { ...process.env, DATABASE_URL: db.url, PORT: "0" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const exited = once(child, "exit");
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const until = async (what: string) => {
      for (let i = 0; i < 300 && !out.includes(what); i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(out.includes(what), `it said "${what}"`);
    };
    await until("listening on");
    const origin = /listening on (http:\/\/\S+)/.exec(out)?.[1];
    assert.match(origin ?? out, /^http:\/\/127\.0\.0\.1:\d+$/, "it listens on loopback");
    const pay = (key: string) =>
      fetch(`${origin}/pay`, {
        method: "POST",
        headers: { "content-type": "application/json", "Idempotency-Key": key },
        body: JSON.stringify({ amount: 700, to: "acct_start" }),
      });

    const key = `start-${Date.now()}`;
    const first = await pay(key);
    const again = await pay(key);
    assert.deepEqual([first.status, again.status], [200, 200]);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(await again.text(), await first.text());
    assert.equal(await transfersFor(key), 1);

    // A payment held in flight (its transfer waits on a table lock the test holds) while the server is told to stop, twice.
    const barrier = await sql.reserve();
    await barrier`begin`;
    await barrier`lock table transfers in exclusive mode`;
    const held = `held-${Date.now()}`;
    const inFlight = pay(held);
    try {
      assert.equal(await lockWaiters(1), 1, "the payment waits on the table");
      child.kill("SIGINT");
      await until("stopping");
      child.kill("SIGINT");
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(child.exitCode, null, "still running while the payment is in flight");
    } finally {
      await barrier`commit`;
      barrier.release();
    }
    assert.equal((await inFlight).status, 200);
    assert.equal(await transfersFor(held), 1);
    const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
    assert.deepEqual({ code, signal }, { code: 0, signal: null });
  });
});
