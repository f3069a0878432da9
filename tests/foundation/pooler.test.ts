/**
 * The idempotency core through a real PgBouncer 1.18 in transaction mode
 * with three server connections, the app's pool (30 connections) opened on
 * it as DATABASE_POOLED=true opens it: every transaction of every request may
 * land on another server session. Duplicates of fresh keys in bursts, a wait
 * that must stay bounded, an abandoned transaction that must end, holders
 * killed with SIGKILL in processes of their own, and the completer, counting
 * executions, payments, provider charges and ledger rows.
 */
import { once } from "node:events";
import { rmSync } from "node:fs";
import path from "node:path";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { z } from "zod";
import { scratchClusterParent } from "../../db/cluster-home";
import { closeDatabase, database } from "../../db/client";
import * as schema from "../../db/schema";
import { schemaBehind } from "../../db/migrate";
import { startDatabaseMonitor } from "../../db/monitor";
import { pgBouncerBinary, startPgBouncer, type RunningPgBouncer } from "../../db/pgbouncer";
import { CATALOG, seedDemo } from "../../db/seed";
import { app } from "../../server/app";
import { openAppDatabase } from "../../server/database";
import { createIdempotencyProcedures } from "@exactly-once/trpc";
import { reconcile } from "../../server/reconcile/reconcile";
import { createCallerFactory, router, tenantProcedure } from "../../server/trpc";
import { ledgerFor, unbalancedTransactions } from "../support/api";
import { freePort } from "../support/database";
import {
  barrier,
  effects,
  effectsFor,
  ensureEffectsTable,
  holderThatHangs,
  keyRow,
  newTenant,
  post,
  uniqueKey,
  type TestTenant,
} from "../idempotency/fixture";
import { chargesFor, killOnceCharged, payChild, paymentsForKey, providerCharges } from "../payments/support";

const POOL_SIZE = 3;
const APP_CONNECTIONS = 30;

const installed = pgBouncerBinary() !== undefined;

let bouncer: RunningPgBouncer;
let scratch: string;
let tenant: TestTenant;

/** What a process of the app started through the pooler is given. */
const pooledEnv = () => ({ DATABASE_URL: bouncer.url, DATABASE_POOLED: "true", MIGRATE_ON_START: "false" });

/** A runtime whose transactions give up their lock after 300 ms idle: the net for an abandoned transaction, made short. */
const impatient = createIdempotencyProcedures({
  ...app.idempotencyRuntime,
  limits: { ...app.idempotencyRuntime.limits, idleInTransactionTimeoutMs: 300 },
});
/** By tag: the first attempt says it is parked, then waits for `hold`. */
const parked = new Map<string, { entered: () => void; hold: Promise<void> }>();
const abandonRouter = router({
  abandoned: tenantProcedure
    .meta({ idempotent: true, rest: { method: "POST", path: "/t/abandoned", status: 201, summary: "test", tags: ["test"] } })
    .input(z.object({ tag: z.string() }))
    .concat(impatient.atomic({ waitMs: 5_000 }))
    .mutation(async ({ ctx, input }) => {
      const [row] = await ctx.idempotency.tx
        .insert(effects)
        .values({ tenantId: ctx.tenant.id, key: ctx.idempotency.key, note: input.tag, amount: 1 })
        .returning();
      // The first attempt stops here with its transaction open, as a frozen process would.
      const park = parked.get(input.tag);
      park?.entered();
      await park?.hold;
      return { id: row!.id };
    }),
});
const abandonCaller = async (key: string) =>
  createCallerFactory(abandonRouter)(await app.createContextInner({ tenant, headers: new Headers({ "Idempotency-Key": key }) }));

describe.skipIf(!installed)(
  `through PgBouncer in transaction mode, pool_size ${POOL_SIZE}${installed ? "" : " (skipped: /usr/sbin/pgbouncer is not installed; apt-get install -y pgbouncer)"}`,
  () => {
    beforeAll(async () => {
      scratch = scratchClusterParent("pgbouncer");
      bouncer = await startPgBouncer({
        upstreamUrl: inject("directDatabaseUrl"),
        port: await freePort(),
        runDir: path.join(scratch, "run"),
        poolSize: POOL_SIZE,
      });
      await closeDatabase();
      openAppDatabase(bouncer.url, { pooled: true, max: APP_CONNECTIONS });
      await ensureEffectsTable();
      tenant = await newTenant("pooled");
      // Every client connection open before a burst, so the burst is not staggered by connection set-up.
      await Promise.all(Array.from({ length: APP_CONNECTIONS }, () => database().sql`select 1`));
    });

    afterAll(async () => {
      await closeDatabase();
      await bouncer?.stop();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    });

    it(`really multiplexes: ${APP_CONNECTIONS} concurrent queries share at most ${POOL_SIZE} server sessions`, async () => {
      const pids = await Promise.all(
        Array.from({ length: APP_CONNECTIONS }, () => database().sql<{ pid: number }[]>`select pg_backend_pid() as pid, pg_sleep(0.05)`),
      );
      const distinct = new Set(pids.map(([row]) => row!.pid));
      expect(distinct.size).toBeGreaterThan(0);
      expect(distinct.size).toBeLessThanOrEqual(POOL_SIZE);
    });

    it("eight instances starting at once through it: the schema check and the demo seed all succeed, the catalog once", async () => {
      const starts = Array.from({ length: 8 }, () => postgres(bouncer.url, { max: 1, prepare: false, onnotice: () => {} }));
      try {
        const ready = barrier(starts.length);
        await Promise.all(
          starts.map(async (sql) => {
            await ready();
            expect(await schemaBehind(sql)).toBe(false);
            await seedDemo(drizzle({ client: sql, schema }));
          }),
        );
      } finally {
        await Promise.all(starts.map((sql) => sql.end()));
      }
      const [row] = await database().sql<
        { n: number }[]
      >`select count(*)::int as n from products where sku in ${database().sql(CATALOG.map((p) => p.sku))}`;
      expect(row!.n).toBe(CATALOG.length);
    });

    it("the health monitor's probe says up all along while every server session is busy with others", async () => {
      const changes: boolean[] = [];
      const monitor = startDatabaseMonitor({ url: bouncer.url, onChange: (up) => changes.push(up), everyMs: 20 });
      try {
        // Load that takes the server sessions in turn, so the probe's statements land on different ones.
        for (let round = 0; round < 40; round++) {
          await Promise.all(Array.from({ length: APP_CONNECTIONS }, (_, i) => database().sql`select pg_sleep(${(i % 3) / 1000})`));
        }
      } finally {
        await monitor.stop();
      }
      expect(changes).toEqual([]);
    });

    it.each(["/t/atomic", "/t/recoverable"] as const)(
      "%s: 20 duplicates of each of 25 fresh keys at once run each key exactly once",
      async (route) => {
        for (let i = 0; i < 25; i++) {
          const key = uniqueKey(`pooled${i}`);
          const ready = barrier(20);
          const answers = await Promise.all(
            Array.from({ length: 20 }, async () => {
              await ready();
              const res = await post(tenant, route, { tag: key, amount: 7 }, key);
              return { status: res.status, body: await res.text(), replayed: res.headers.get("idempotent-replayed") === "true" };
            }),
          );
          expect((await effectsFor(tenant.id, key)).length, `key ${key}`).toBe(route === "/t/atomic" ? 1 : 2);
          const ok = answers.filter((a) => a.status === 201);
          expect(
            ok.length + answers.filter((a) => a.status === 409).length,
            JSON.stringify(answers.filter((a) => a.status !== 201 && a.status !== 409)),
          ).toBe(20);
          expect(new Set(ok.map((a) => a.body)).size).toBe(1);
          expect(ok.filter((a) => !a.replayed)).toHaveLength(1);
          expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", response_status: 201, response_body: ok[0]!.body });
        }
      },
    );

    it(
      "a duplicate whose INSERT meets an uncommitted key row waits at most its budget (lock_timeout set in its own transaction), then 409",
      { timeout: 30_000 },
      async () => {
        const key = uniqueKey("bounded");
        // Another attempt's key row, inserted and not committed: its transaction holds one of the pooler's three server connections.
        const holder = await database().sql.reserve();
        try {
          await holder`begin`;
          await holder`insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, expires_at)
        values (${tenant.id}, ${key}, 'atomic', 'held', 'held', now() + interval '1 hour')`;
          // An unbounded wait would never end: the holder commits nothing until both duplicates have answered.
          const atOnce = await post(tenant, "/t/atomic-no-wait", { tag: key, amount: 3 }, key);
          const afterBudget = await post(tenant, "/t/atomic", { tag: key, amount: 3 }, key);
          expect([atOnce.status, afterBudget.status]).toEqual([409, 409]);
          await holder`rollback`;
        } finally {
          holder.release();
        }
        // Neither duplicate's work committed; the key is free again, and a retry runs once.
        expect(await effectsFor(tenant.id, key)).toHaveLength(0);
        expect((await post(tenant, "/t/atomic", { tag: key, amount: 3 }, key)).status).toBe(201);
        expect(await effectsFor(tenant.id, key)).toHaveLength(1);
      },
    );

    it(
      "a transaction left open ends on the server (idle_in_transaction_session_timeout set in it): the retry takes the key, once",
      { timeout: 30_000 },
      async () => {
        const key = uniqueKey("abandoned");
        let wake!: () => void;
        let entered!: () => void;
        const parkedNow = new Promise<void>((r) => (entered = r));
        parked.set(key, { entered, hold: new Promise<void>((r) => (wake = r)) });
        const first = (await abandonCaller(key)).abandoned({ tag: key }).then(
          () => "committed",
          () => "failed",
        );
        // The first attempt's business row is written inside its open transaction; then it idles longer than its 300 ms.
        await parkedNow;
        parked.delete(key);
        await new Promise((r) => setTimeout(r, 1_000));
        const retry = await (await abandonCaller(key)).abandoned({ tag: key });
        wake();
        expect(await first).toBe("failed");
        expect(await effectsFor(tenant.id, key)).toEqual([{ note: key }]);
        expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "1", response_body: JSON.stringify(retry) });
      },
    );

    it("SIGKILL of an atomic holder mid-transaction: its writes vanish with it, the retry runs once", async () => {
      const key = uniqueKey("killed-atomic");
      const child = await holderThatHangs(tenant, "atomic", key, "after-write", 30_000, pooledEnv());
      child.kill("SIGKILL");
      await once(child, "exit");
      const res = await post(tenant, "/t/atomic", { tag: key, amount: 13 }, key);
      expect(res.status).toBe(201);
      expect(res.headers.get("idempotent-replayed")).toBeNull();
      expect(await effectsFor(tenant.id, key)).toHaveLength(1);
      expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "1" });
    });

    it("SIGKILL of a recoverable holder between phases: after the lease the retry takes over and finishes once", async () => {
      const key = uniqueKey("killed-recoverable");
      const child = await holderThatHangs(tenant, "recoverable", key, "between", 1_000, pooledEnv());
      child.kill("SIGKILL");
      await once(child, "exit");
      await new Promise((r) => setTimeout(r, 1_100));
      const res = await post(tenant, "/t/recoverable", { tag: key, amount: 13 }, key);
      expect(res.status).toBe(201);
      expect((await effectsFor(tenant.id, key)).map((e) => e.note)).toEqual([`${key}:recorded`, `${key}:settled`]);
      expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "2" });
    });

    it("the completer, in two instances at once, finishes a payment whose holder was killed after the charge: one charge, one balanced movement", async () => {
      const payer = await newTenant("pooled-completer");
      const key = uniqueKey("completer");
      const child = payChild(payer, key, "31.00", "acct_test_slow", pooledEnv());
      const paymentId = await killOnceCharged(child, payer.id, key);
      await new Promise((r) => setTimeout(r, 1_100));
      const outcomes = [];
      for (let round = 0; round < 50 && (await paymentsForKey(payer.id, key))[0]?.status !== "succeeded"; round++) {
        const [a, b] = await Promise.all([
          app.completer.completeDueKeys({ tenantId: payer.id, backoffMs: 20, maxBackoffMs: 100 }),
          app.completer.completeDueKeys({ tenantId: payer.id, backoffMs: 20, maxBackoffMs: 100 }),
        ]);
        outcomes.push(...a, ...b);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(outcomes.filter((o) => o.outcome === "completed")).toEqual([expect.objectContaining({ key, status: 201 })]);
      const [payment] = await paymentsForKey(payer.id, key);
      expect(payment).toMatchObject({ id: paymentId, status: "succeeded", amount_captured_minor: 3100 });
      expect(await chargesFor(paymentId)).toHaveLength(1);
      expect(await ledgerFor(payer.id, key)).toHaveLength(2);
      expect(await unbalancedTransactions(payer.id)).toHaveLength(0);
      expect(await reconcile(database().db, await providerCharges(), { tenantId: payer.id })).toEqual([]);
    });
  },
);
