/**
 * A tRPC app on the package alone, as the guide sets one up (standalone
 * adapter, `createRuntime({ sql })`), served over HTTP on loopback, with one
 * mutation per flavour. Each execution leaves a row in `effects`, so a test
 * counts what really ran in the database, not what the answers say:
 * - `deposit` (atomic): one row, in the key's transaction;
 * - `pay` (recoverable): a `recorded` row at its first recovery point, a
 *   call to a downstream stand-in (`downstream_calls`, with the key the
 *   middleware derives for it), and a `charged` row at its second;
 * - `charge` (recoverable, a payment's common path): the call out, then a
 *   `charged` row that commits with the key's completion (`finish`); its
 *   downstream stand-in is this process's `charges`, so that the database
 *   sees the middleware's commits and no others.
 * `hooks` hold a call at a point, by the input's `tag`; `outcome` makes a
 * call refuse (403, final) or fail (500, not final), before it writes or,
 * `late-`, after everything it writes.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { initTRPC, TRPCError } from "@trpc/server";
import { createHTTPServer } from "@trpc/server/adapters/standalone";
import postgres, { type ReservedSql, type Sql } from "postgres";
import { z } from "zod";
import {
  createIdempotencyProcedures,
  createRuntime,
  outcomeHeaders,
  migrate,
  type IdempotencyContext,
  type IdempotencyEvent,
  type IdempotencyRuntime,
  type ProcedureOptions,
} from "../src/index.js";
import { deferred, sleep } from "./waiting.js";

/** `after-write`: a handler's row written, its transaction open (an atomic one's, or `charge`'s finish); `before-complete`: `pay`'s last phase committed. */
export type Point = "before" | "after-write" | "between" | "before-complete";
/** Code a call runs at a point, by its tag; a test's own tags, so tests never meet each other's hooks. */
export const hooks = new Map<string, (point: Point) => Promise<void> | void>();
/** `charge`'s calls out in this process, by tag: the downstream keys it sent. */
export const charges = new Map<string, string[]>();
/** Each `pay` holder's `signal`, by tag, in the order the holders ran: read when a test asks, as a handler would. */
export const signals = new Map<string, (() => AbortSignal)[]>();
/** Executions of each tag's handler in this process, counted before anything is written. */
export const executions = new Map<string, number>();

export const input = z.object({
  tag: z.string().min(1),
  amount: z.number().int().positive(),
  outcome: z.enum(["ok", "refuse", "boom", "late-refuse", "late-boom"]).default("ok"),
  extra: z.record(z.string(), z.unknown()).optional(),
});
export type Input = z.input<typeof input>;

async function start(i: z.infer<typeof input>): Promise<void> {
  executions.set(i.tag, (executions.get(i.tag) ?? 0) + 1);
  await hooks.get(i.tag)?.("before");
  if (i.outcome === "refuse") throw new TRPCError({ code: "FORBIDDEN", message: "Refused by a test rule." });
  if (i.outcome === "boom") throw new Error("an unexpected failure");
}

function failLate(i: z.infer<typeof input>): void {
  if (i.outcome === "late-refuse") throw new TRPCError({ code: "FORBIDDEN", message: "Refused by a test rule." });
  if (i.outcome === "late-boom") throw new Error("an unexpected failure");
}

// As in production: an error answer carries no stack, so a replayed refusal is the stored one byte for byte.
const t = initTRPC.context<IdempotencyContext>().create({ isDev: false });

/** Runtime options beyond the defaults (`onEvent`, `renewEveryMs`, `admitNewKey`, …) for a test's own app. */
export type Overrides = Partial<IdempotencyRuntime<ReservedSql>>;

export function createApp(sql: Sql, defaults: ProcedureOptions = {}, overrides: Overrides = {}) {
  const idempotency = createIdempotencyProcedures({ ...createRuntime({ sql, defaults }), ...overrides });
  const router = t.router({
    deposit: t.procedure
      .input(input)
      .concat(idempotency.atomic())
      .mutation(async ({ ctx, input: i }) => {
        await start(i);
        const [row] = await ctx.idempotency.tx<{ id: string }[]>`
          insert into effects (tenant_id, key, tag, note, amount)
          values (${ctx.tenant.id}, ${ctx.idempotency.key}, ${i.tag}, 'deposit', ${i.amount}) returning id`;
        await hooks.get(i.tag)?.("after-write");
        failLate(i);
        return { effectId: Number(row!.id), amount: i.amount };
      }),
    pay: t.procedure
      .input(input)
      .concat(idempotency.recoverable())
      .mutation(async ({ ctx, input: i }) => {
        await start(i);
        const h = ctx.idempotency;
        signals.set(i.tag, [...(signals.get(i.tag) ?? []), () => h.signal]);
        const recorded = await h.phase("recorded", async (tx) => {
          const [row] = await tx<{ id: string }[]>`
            insert into effects (tenant_id, key, tag, note, amount)
            values (${ctx.tenant.id}, ${h.key}, ${i.tag}, 'recorded', ${i.amount}) returning id`;
          return { effectId: Number(row!.id) };
        });
        await sql`insert into downstream_calls (tag, downstream_key) values (${i.tag}, ${h.downstreamKey})`;
        await hooks.get(i.tag)?.("between");
        const charged = await h.phase("charged", async (tx) => {
          await tx`insert into effects (tenant_id, key, tag, note, amount) values (${ctx.tenant.id}, ${h.key}, ${i.tag}, 'charged', ${i.amount})`;
          return { effectId: recorded.effectId, amount: i.amount };
        });
        await hooks.get(i.tag)?.("before-complete");
        failLate(i);
        return charged;
      }),
    charge: t.procedure
      .input(input)
      .concat(idempotency.recoverable())
      .mutation(async ({ ctx, input: i }) => {
        await start(i);
        const h = ctx.idempotency;
        charges.set(i.tag, [...(charges.get(i.tag) ?? []), h.downstreamKey]);
        await hooks.get(i.tag)?.("between");
        return h.finish("charged", async (tx) => {
          const [row] = await tx<{ id: string }[]>`
            insert into effects (tenant_id, key, tag, note, amount)
            values (${ctx.tenant.id}, ${h.key}, ${i.tag}, 'charged', ${i.amount}) returning id`;
          await hooks.get(i.tag)?.("after-write");
          failLate(i);
          return { effectId: Number(row!.id), amount: i.amount };
        });
      }),
  });
  return { router, createCaller: t.createCallerFactory(router) };
}

export type Flavour = "deposit" | "pay" | "charge";
export const FLAVOURS: { procedure: Flavour; flavour: string }[] = [
  { procedure: "deposit", flavour: "atomic" },
  { procedure: "pay", flavour: "recoverable" },
  { procedure: "charge", flavour: "recoverable, finished" },
];

/** The database at `url` (the run's: `inject("packageDatabaseUrl")`), migrated, with the test tables, on a pool of `max` connections. */
export async function openDatabase(url: string, max = 40): Promise<Sql> {
  const sql = postgres(url, { max, onnotice: () => {} });
  await migrate(sql);
  await sql`create table if not exists effects (
    id bigserial primary key, tenant_id text not null, key text not null, tag text not null, note text not null, amount integer not null)`;
  await sql`create table if not exists downstream_calls (id bigserial primary key, tag text not null, downstream_key text not null)`;
  return sql;
}

export type Served = { base: string; close: () => Promise<void> };

/** The app on the standalone adapter at 127.0.0.1 (a free port); the tenant is the `x-tenant` header's, `t1` without one. */
export async function serve(sql: Sql, defaults: ProcedureOptions = {}, overrides: Overrides = {}): Promise<Served> {
  const server = createHTTPServer({
    router: createApp(sql, defaults, overrides).router,
    createContext: ({ req }) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
      return { headers, tenant: { id: headers.get("x-tenant") ?? "t1" }, outcomes: [] };
    },
    responseMeta: ({ ctx }) => ({ headers: outcomeHeaders(ctx) }),
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export type Answer = { status: number; body: string; replayed: boolean; retryAfter: string | null };

/** One POST of `body` (or of that text) to `procedure`, on a connection of its own. */
export async function post(
  base: string,
  procedure: Flavour,
  key: string | undefined,
  body: Input | string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(`${base}/${procedure}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      connection: "close",
      ...(key === undefined ? {} : { "idempotency-key": key }),
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return {
    status: res.status,
    body: await res.text(),
    replayed: res.headers.get("idempotent-replayed") === "true",
    retryAfter: res.headers.get("retry-after"),
  };
}

/** A tRPC caller of `app` (no HTTP in between), sending `key` (or none) as Idempotency-Key, as `tenant`. */
export const caller = (app: ReturnType<typeof createApp>, key?: string, tenant = "t1") =>
  app.createCaller({ headers: new Headers(key === undefined ? {} : { "idempotency-key": key }), tenant: { id: tenant }, outcomes: [] });

/** The rows a tag's executions left, by note (only `tenant`'s, given one). */
export async function effectsOf(sql: Sql, tag: string, tenant?: string): Promise<Record<string, number>> {
  const rows = await sql<{ note: string; n: number }[]>`
    select note, count(*)::int as n from effects where tag = ${tag} and (${tenant ?? null}::text is null or tenant_id = ${tenant ?? null})
    group by note`;
  return Object.fromEntries(rows.map((r) => [r.note, r.n]));
}

export type KeyRow = {
  state: string;
  fingerprint: string;
  response_status: number | null;
  response_body: string | null;
  replay_count: number;
  fence: string;
  recovery_point: string;
  lease_expired: boolean;
};

/** The key's row, as the middleware left it. */
export async function keyRow(sql: Sql, key: string, tenant = "t1"): Promise<KeyRow | undefined> {
  const [row] = await sql<KeyRow[]>`
    select state, fingerprint, response_status, response_body, replay_count, fence, recovery_point,
           coalesce(locked_until <= now(), true) as lease_expired
    from idempotency_keys where tenant_id = ${tenant} and key = ${key}`;
  return row;
}

/** The events an app's `onEvent` received, and the sink to hand it. */
export function recorder() {
  const events: IdempotencyEvent[] = [];
  return {
    events,
    onEvent: (event: IdempotencyEvent) => void events.push(event),
    of: (key: string) => events.filter((e) => e.key === key),
  };
}

/**
 * Holds the first call of `tag` that reaches `point` (any point when none is
 * given) until `release()`; every later arrival passes straight through.
 * `entered` resolves once that call is parked.
 */
export function park(tag: string, point?: Point) {
  const entered = deferred();
  const hold = deferred();
  let parked = false;
  hooks.set(tag, async (at) => {
    if (parked || (point && at !== point)) return;
    parked = true;
    entered.resolve();
    await hold.promise;
  });
  return { entered: entered.promise, release: hold.resolve };
}

export const downstreamCallsOf = (sql: Sql, tag: string) =>
  sql<{ downstream_key: string }[]>`select downstream_key from downstream_calls where tag = ${tag} order by id`.then((rows) =>
    rows.map((r) => r.downstream_key),
  );

let counter = 0;
/** A tag (and key) no other test or run uses. */
export const fresh = (what: string) => `${what}-${process.pid}-${Date.now().toString(36)}-${++counter}`;

/** What one execution of each flavour leaves. */
export const ONE_EXECUTION: Record<Flavour, Record<string, number>> = {
  deposit: { deposit: 1 },
  pay: { recorded: 1, charged: 1 },
  charge: { charged: 1 },
};

/**
 * A holder that dies with `key` in progress: test/holder-child.ts serves the
 * app in a process of its own, takes the key and stops at `point`, and is
 * SIGKILLed there.
 */
export async function crashHolder(
  url: string,
  leaseMs: number,
  procedure: Flavour,
  key: string,
  point: Point,
  /** What to look at while the holder holds the key, before it dies. */
  whileHeld: () => Promise<void> = async () => undefined,
): Promise<void> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(import.meta.dirname, "holder-child.ts"), url, String(leaseMs), procedure, key, point],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let out = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const exited = once(child, "exit");
  for (let i = 0; i < 300 && !out.includes("holding") && child.exitCode === null; i++) await sleep(50);
  try {
    if (out.includes("holding")) await whileHeld();
  } finally {
    child.kill("SIGKILL");
  }
  await exited;
  if (!out.includes("holding")) throw new Error(`the holder never reached "${point}" (${out.trim() || "no output"})`);
}

/** Sends until the answer is not a 409 (the key still held, or its lease still running), for up to `ms`. */
export async function retryUntilDecided(base: string, procedure: Flavour, key: string, body: Input, ms: number): Promise<Answer> {
  const deadline = Date.now() + ms;
  for (;;) {
    const answer = await post(base, procedure, key, body);
    if (answer.status !== 409 || Date.now() > deadline) return answer;
    await sleep(200);
  }
}
