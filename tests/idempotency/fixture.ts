/**
 * A small test-only router on the real middleware: each call writes one row
 * to `test_effects`, so a test can count executions in the database. Hooks
 * let a test hold a handler at a chosen point (a barrier, a stall, a crash).
 */
import { spawn } from "node:child_process";
import { sql } from "drizzle-orm";
import { integer, pgTable, serial, text, timestamp } from "drizzle-orm/pg-core";
import { inject } from "vitest";
import { z } from "zod";
import { database } from "../../db/client";
import { DomainError } from "../../server/errors";
import type { RecoverableHandle } from "@exactly-once/trpc";
import { app } from "../../server/app";
import type { Tenant as TestTenant } from "../support/api";
import type { Db } from "../../db/client";
import type { RestMeta } from "../../server/meta";
import { createCallerFactory, idempotentProcedure, recoverableProcedure, router } from "../../server/trpc";

export { barrier, newTenant, type Tenant as TestTenant } from "../support/api";

export const effects = pgTable("test_effects", {
  id: serial("id").primaryKey(),
  tenantId: text("tenant_id").notNull(),
  key: text("key").notNull(),
  note: text("note").notNull(),
  amount: integer("amount").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

export async function ensureEffectsTable() {
  await database().db.execute(sql`
    create table if not exists test_effects (
      id serial primary key, tenant_id text not null, key text not null,
      note text not null, amount integer not null, created_at timestamptz not null default now())`);
}

export type Point = "before" | "after-write" | "between";
/** Keyed by the input's `tag`: each test uses its own tags, so tests never see each other's hooks. */
export const hooks = new Map<string, (point: Point) => Promise<void> | void>();

export const input = z.object({
  tag: z.string().min(1),
  amount: z.number().int().positive(),
  outcome: z.enum(["ok", "refuse", "boom"]).default("ok"),
  extra: z.record(z.string(), z.unknown()).optional(),
});
type Input = z.infer<typeof input>;

const rest = (path: `/${string}`): { rest: RestMeta } => ({ rest: { method: "POST", path, status: 201, summary: "test", tags: ["test"] } });

function outcome(i: Input) {
  if (i.outcome === "refuse") throw new DomainError("payment-declined", 402, "Refused by a test rule.", { tag: i.tag });
  if (i.outcome === "boom") throw new Error("an unexpected failure");
}

function recoverableHandler() {
  return async ({ ctx, input: i }: { ctx: { tenant: { id: string }; idempotency: RecoverableHandle<Db> }; input: Input }) => {
    const h = ctx.idempotency;
    const recorded = await h.phase("recorded", async (tx) => {
      const [row] = await tx
        .insert(effects)
        .values({ tenantId: ctx.tenant.id, key: h.key, note: `${i.tag}:recorded`, amount: i.amount })
        .returning();
      return { effectId: row!.id };
    });
    await hooks.get(i.tag)?.("between");
    const settled = await h.phase("settled", async (tx) => {
      const [row] = await tx
        .insert(effects)
        .values({ tenantId: ctx.tenant.id, key: h.key, note: `${i.tag}:settled`, amount: i.amount })
        .returning();
      return { effectId: row!.id };
    });
    outcome(i);
    return { recorded: recorded.effectId, settled: settled.effectId, tag: i.tag, amount: i.amount };
  };
}

export const testRouter = router({
  atomic: idempotentProcedure(input, { waitMs: 5_000 })
    .meta(rest("/t/atomic"))
    .mutation(async ({ ctx, input: i }) => {
      await hooks.get(i.tag)?.("before");
      const [row] = await ctx.idempotency.tx
        .insert(effects)
        .values({ tenantId: ctx.tenant.id, key: ctx.idempotency.key, note: i.tag, amount: i.amount })
        .returning();
      await hooks.get(i.tag)?.("after-write");
      outcome(i);
      return { id: row!.id, tag: i.tag, amount: i.amount, createdAt: row!.createdAt.toISOString() };
    }),
  atomicNoWait: idempotentProcedure(input, { waitMs: 0 })
    .meta(rest("/t/atomic-no-wait"))
    .mutation(async ({ ctx, input: i }) => {
      await hooks.get(i.tag)?.("before");
      const [row] = await ctx.idempotency.tx
        .insert(effects)
        .values({ tenantId: ctx.tenant.id, key: ctx.idempotency.key, note: i.tag, amount: i.amount })
        .returning();
      return { id: row!.id, tag: i.tag };
    }),
  recoverable: recoverableProcedure(input, { waitMs: 5_000 }).meta(rest("/t/recoverable")).mutation(recoverableHandler()),
  recoverableNoWait: recoverableProcedure(input, { waitMs: 0 }).meta(rest("/t/recoverable-no-wait")).mutation(recoverableHandler()),
});

const createCaller = createCallerFactory(testRouter);
export const restHandler = app.restHandlerFor(testRouter);

/** A tRPC caller as the tenant, sending `key` (or no key) as Idempotency-Key. */
export async function caller(tenant: TestTenant, key?: string) {
  const headers = new Headers(key === undefined ? {} : { "Idempotency-Key": key });
  return createCaller(await app.createContextInner({ tenant, headers }));
}

/** `extra`: more request headers (an `Idempotency-Attempt`, say). */
export function post(tenant: TestTenant, path: string, body: unknown, key?: string, extra: Record<string, string> = {}) {
  const headers = new Headers({ ...extra, authorization: `Bearer ${tenant.token}`, "content-type": "application/json" });
  if (key !== undefined) headers.set("Idempotency-Key", key);
  return restHandler(
    new Request(`http://test/api${path}`, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) }),
  );
}

export async function effectsFor(tenantId: string, key: string) {
  return database().sql<{ note: string }[]>`select note from test_effects where tenant_id = ${tenantId} and key = ${key} order by id`;
}

/** The key's row; pending events are written first, since the replay count comes from them. */
export async function keyRow(tenantId: string, key: string) {
  await app.eventLog.flush();
  const [row] = await database().sql<
    {
      state: string;
      fingerprint: string;
      response_status: number | null;
      response_body: string | null;
      replay_count: number;
      fence: string;
      recovery_point: string;
      lease_expired: boolean;
    }[]
  >`select state, fingerprint, response_status, response_body, replay_count, fence, recovery_point, coalesce(locked_until <= now(), true) as lease_expired
    from idempotency_keys where tenant_id = ${tenantId} and key = ${key}`;
  return row;
}

/**
 * Holds the first handler of `key` that reaches `point` (any point when none
 * is given) until `release()`; every later arrival passes straight through.
 * `entered` resolves once the handler is parked.
 */
export function park(key: string, point?: Point) {
  const entered = deferred();
  const hold = deferred();
  let parked = false;
  hooks.set(key, async (at) => {
    if (parked || (point && at !== point)) return;
    parked = true;
    entered.resolve();
    await hold.promise;
  });
  return { entered: entered.promise, release: hold.resolve };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

export const uniqueKey = (label = "k") => `${label}-${crypto.randomUUID()}`;

export async function count(query: Promise<{ count: number }[]>): Promise<number> {
  const [row] = await query;
  return row?.count ?? 0;
}

/**
 * Starts a holder in its own process (crash-child.ts) and resolves once it is
 * parked at `point`, for the test to kill. `env` overrides the database it
 * uses (the run's, by default).
 */
export async function holderThatHangs(
  tenant: TestTenant,
  procedure: "atomic" | "recoverable",
  key: string,
  point: string,
  leaseMs: number,
  env: Record<string, string> = {},
) {
  const child = spawn(process.execPath, ["--import", "tsx", "tests/idempotency/crash-child.ts", procedure, tenant.id, key, point], {
    env: { ...process.env, DATABASE_URL: inject("databaseUrl"), IDEMPOTENCY_LEASE_MS: String(leaseMs), LOG_LEVEL: "silent", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.setEncoding("utf8");
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: string) => {
      out += chunk;
      if (out.includes("holding")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`holder exited early (${code})`)));
  });
  return child;
}
