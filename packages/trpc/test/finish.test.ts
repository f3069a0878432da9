/**
 * `finish`: a payment's common path (claim, call out, the writes with the
 * result) at its floor. The writes commit together with the key's
 * completion, so the payment costs two commits; a crash between them is
 * finished by the completer; a holder that lost its key meanwhile commits
 * none of its writes.
 */
import { initTRPC } from "@trpc/server";
import postgres, { type Sql } from "postgres";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { z } from "zod";
import { createCompleter, createIdempotencyProcedures, createRuntime, type IdempotencyContext } from "../src/index.js";
import {
  charges,
  createApp,
  crashHolder,
  effectsOf,
  fresh,
  keyRow,
  openDatabase,
  park,
  post,
  retryUntilDecided,
  serve,
  type Served,
} from "./harness.js";
import { trpcError } from "./waiting.js";

const LEASE_MS = 1_000;
const url = inject("packageDatabaseUrl");
let sql: Sql;
let app: Served;
beforeAll(async () => {
  sql = await openDatabase(url);
  // No renewal: a parked holder's lease runs out, as a stalled process's does.
  app = await serve(sql, { leaseMs: LEASE_MS }, { renewEveryMs: () => 0 });
});
afterAll(async () => {
  await app?.close();
  await sql?.end({ timeout: 5 });
});

/** `url` with another database. */
const databaseUrl = (name: string) => Object.assign(new URL(url), { pathname: `/${name}` }).toString();

/** The transactions committed in `database` so far, once its backends have reported them (they do when they exit). */
async function commitsIn(database: string): Promise<number> {
  const read = async () =>
    Number((await sql<{ n: string }[]>`select xact_commit as n from pg_stat_database where datname = ${database}`)[0]!.n);
  let last = await read();
  for (;;) {
    await new Promise((r) => setTimeout(r, 300));
    const now = await read();
    if (now === last) return now;
    last = now;
  }
}

it("a one-phase payment, sent for the first time, commits twice: its claim, then its writes with the completion", async () => {
  // A database of its own, so that the count is the payment's alone; its tables are never vacuumed meanwhile.
  const database = `eo_commits_${process.pid}_${Date.now().toString(36)}`;
  await sql.unsafe(`create database ${database}`);
  try {
    const setup = await openDatabase(databaseUrl(database), 1);
    for (const table of ["idempotency_keys", "effects", "downstream_calls"]) {
      await setup.unsafe(`alter table ${table} set (autovacuum_enabled = off)`);
    }
    await setup.end();

    const PAYMENTS = 5;
    // The least of three measurements: a catalog's autovacuum may add a commit to one, nothing can take one away.
    const counted: number[] = [];
    for (let round = 0; round < 3 && !counted.includes(2 * PAYMENTS); round++) {
      const before = await commitsIn(database);
      // One connection and no type lookup on it: its only transactions are its start-up's (the server reads its
      // catalog in one) and the middleware's.
      const pool = postgres(databaseUrl(database), { max: 1, fetch_types: false, onnotice: () => {} });
      const payments = createApp(pool);
      const tag = fresh("commits");
      for (let i = 0; i < PAYMENTS; i++) {
        const call = payments.createCaller({
          headers: new Headers({ "idempotency-key": `${tag}-${i}`, "idempotency-attempt": "1" }),
          tenant: { id: "t1" },
          outcomes: [],
        });
        expect(await call.charge({ tag, amount: 100 })).toMatchObject({ amount: 100 });
      }
      await pool.end();
      counted.push((await commitsIn(database)) - before - 1);
      const check = postgres(databaseUrl(database), { max: 1, onnotice: () => {} });
      expect(await effectsOf(check, tag)).toEqual({ charged: PAYMENTS });
      await check.end();
    }
    expect(Math.min(...counted)).toBe(2 * PAYMENTS);
  } finally {
    await sql.unsafe(`drop database if exists ${database} with (force)`);
  }
});

it("a crash between the claim and the finish: the completer finishes the payment once, and a retry replays its answer", async () => {
  const key = fresh("finish-crash");
  await crashHolder(url, LEASE_MS, "charge", key, "between");
  expect(await keyRow(sql, key)).toMatchObject({ state: "in_progress", recovery_point: "started" });

  const completer = createCompleter({
    sql: () => sql,
    procedures: ["charge"],
    rerun: (due, call) =>
      createApp(sql, { leaseMs: LEASE_MS })
        .createCaller({ tenant: { id: due.tenantId }, ...call })
        .charge(due.input as never),
  });
  await new Promise((r) => setTimeout(r, LEASE_MS + 300));
  expect((await completer.completeDueKeys({ key })).map((o) => o.outcome)).toEqual(["completed"]);
  expect(await effectsOf(sql, key)).toEqual({ charged: 1 });
  expect(await keyRow(sql, key)).toMatchObject({ state: "completed", response_status: 200, recovery_point: "charged" });
  expect((await sql`select completed_by from idempotency_keys where key = ${key}`)[0]).toEqual({ completed_by: "completer" });
  // The completer called out with the dead holder's downstream key: the provider dedupes it into one charge.
  expect(charges.get(key)).toHaveLength(1);

  const retry = await post(app.base, "charge", key, { tag: key, amount: 2500 });
  expect(retry).toMatchObject({ status: 200, replayed: true });
  expect(JSON.parse(retry.body)).toMatchObject({ result: { data: { amount: 2500 } } });
});

it("a holder that lost its key while finishing commits none of its writes; the one that took over answers once", async () => {
  const key = fresh("finish-lost");
  const body = { tag: key, amount: 7 };
  // The first holder writes its row in the finish's transaction, then stalls there past its lease.
  const stall = park(key, "after-write");
  const first = post(app.base, "charge", key, body);
  await stall.entered;
  const retry = await retryUntilDecided(app.base, "charge", key, body, 10_000);
  expect(retry.status).toBe(200);
  expect(await keyRow(sql, key)).toMatchObject({ state: "completed", fence: "2" });

  stall.release();
  // Its completion found the key taken over and failed, so COMMIT ended its transaction with its row in it.
  expect((await first).status).toBe(409);
  expect(await effectsOf(sql, key)).toEqual({ charged: 1 });
  expect(charges.get(key)).toHaveLength(2);
  expect(new Set(charges.get(key)).size).toBe(1);
  expect((await post(app.base, "charge", key, body)).body).toBe(retry.body);
});

it("a handler that answers other than its finish, or runs a phase after it, fails loudly; the key keeps the finished answer", async () => {
  const t = initTRPC.context<IdempotencyContext>().create({ isDev: false });
  const idempotency = createIdempotencyProcedures(createRuntime({ sql }));
  const misuse = t.router({
    otherAnswer: t.procedure
      .input(z.object({ n: z.number() }))
      .concat(idempotency.recoverable())
      .mutation(async ({ ctx, input }) => {
        await ctx.idempotency.finish("done", async () => ({ n: input.n }));
        return { n: input.n + 1 };
      }),
    phaseAfter: t.procedure
      .input(z.object({ n: z.number() }))
      .concat(idempotency.recoverable())
      .mutation(async ({ ctx, input }) => {
        const done = await ctx.idempotency.finish("done", async () => ({ n: input.n }));
        await ctx.idempotency.phase("later", async () => null);
        return done;
      }),
  });
  const createCaller = t.createCallerFactory(misuse);
  for (const procedure of ["otherAnswer", "phaseAfter"] as const) {
    const key = fresh(procedure);
    const misused = createCaller({ headers: new Headers({ "idempotency-key": key }), tenant: { id: "t1" }, outcomes: [] });
    const call = () => misused[procedure]({ n: 1 });
    expect((await trpcError(call())).code).toBe("INTERNAL_SERVER_ERROR");
    expect(await keyRow(sql, key)).toMatchObject({ state: "completed", response_body: JSON.stringify({ n: 1 }) });
    expect(await call()).toEqual({ n: 1 });
  }
});
