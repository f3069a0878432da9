/**
 * A holder that crashed with the key in progress (SIGKILLed in a process of
 * its own): the next attempt takes the key over once the holder's lease has
 * run out, and the operation still happens once. An atomic holder's work
 * died with its transaction, so the retry runs it whole; a recoverable one
 * had committed its first recovery point and called downstream, so the
 * retry resumes after that point and calls downstream again with the same
 * derived key (the downstream's own idempotency makes that one charge).
 */
import type { Sql } from "postgres";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import {
  crashHolder,
  downstreamCallsOf,
  effectsOf,
  fresh,
  keyRow,
  openDatabase,
  post,
  retryUntilDecided,
  serve,
  type Served,
} from "./harness.js";

const LEASE_MS = 1_000;
let sql: Sql;
let app: Served;
let noWait: Served;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql, { leaseMs: LEASE_MS });
  noWait = await serve(sql, { leaseMs: LEASE_MS, waitMs: 0 });
});
afterAll(async () => {
  await app?.close();
  await noWait?.close();
  await sql?.end({ timeout: 5 });
});

it("atomic: a holder killed after its write left nothing, the write and the key vanishing together; the retry runs once", async () => {
  const key = fresh("crash-atomic");
  await crashHolder(inject("packageDatabaseUrl"), LEASE_MS, "deposit", key, "after-write", async () => {
    // The write exists inside the holder's open transaction only.
    expect(await effectsOf(sql, key)).toEqual({});
  });
  const retry = await retryUntilDecided(app.base, "deposit", key, { tag: key, amount: 2500 }, LEASE_MS + 10_000);
  expect(retry).toMatchObject({ status: 200, replayed: false });
  expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
  expect(await keyRow(sql, key)).toMatchObject({ state: "completed", fence: "1" });
  const again = await retryUntilDecided(app.base, "deposit", key, { tag: key, amount: 2500 }, 1_000);
  expect(again).toEqual({ ...retry, replayed: true });
});

it("recoverable: a holder killed after its recovery point and its downstream call; the retry resumes there, once", async () => {
  const key = fresh("crash-recoverable");
  await crashHolder(inject("packageDatabaseUrl"), LEASE_MS, "pay", key, "between");
  const [row] = await sql<
    { state: string; recovery_point: string }[]
  >`select state, recovery_point from idempotency_keys where key = ${key}`;
  expect({ ...row }).toEqual({ state: "in_progress", recovery_point: "recorded" });
  // Within the lease the key is still the dead holder's: a caller that does not wait is told to come back.
  expect((await post(noWait.base, "pay", key, { tag: key, amount: 2500 })).status).toBe(409);

  const retry = await retryUntilDecided(app.base, "pay", key, { tag: key, amount: 2500 }, LEASE_MS + 10_000);
  expect(retry.status).toBe(200);
  expect(await effectsOf(sql, key)).toEqual({ recorded: 1, charged: 1 });
  expect(await keyRow(sql, key)).toMatchObject({ state: "completed", fence: "2" });
  const calls = await downstreamCallsOf(sql, key);
  expect(calls).toHaveLength(2);
  expect(new Set(calls).size, "the resumed call sends the downstream the same key").toBe(1);
});
