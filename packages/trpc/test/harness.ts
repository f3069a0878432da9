/**
 * A tRPC app on the package alone, as the guide sets one up (standalone
 * adapter, `createRuntime({ sql })`), served over HTTP on loopback, with one
 * mutation per flavour. Each execution leaves a row in `effects`, so a test
 * counts what really ran in the database, not what the answers say:
 * - `deposit` (atomic): one row, in the key's transaction;
 * - `pay` (recoverable): a `recorded` row at its first recovery point, a
 *   call to a downstream stand-in (`downstream_calls`, with the key the
 *   middleware derives for it), and a `charged` row at its second.
 * `hooks` hold a call at a point, by the input's `tag`; `outcome` makes a
 * call refuse (403, final) or fail (500, not final).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { initTRPC, TRPCError } from "@trpc/server";
import { createHTTPServer } from "@trpc/server/adapters/standalone";
import postgres, { type Sql } from "postgres";
import { z } from "zod";
import {
  createIdempotencyProcedures,
  createRuntime,
  idempotencyHeaders,
  migrate,
  type IdempotencyContext,
  type ProcedureOptions,
} from "../src/index.js";

export type Point = "before" | "between";
/** Code a call runs at a point, by its tag; a test's own tags, so tests never meet each other's hooks. */
export const hooks = new Map<string, (point: Point) => Promise<void> | void>();
/** Executions of each tag's handler in this process, counted before anything is written. */
export const executions = new Map<string, number>();

export const input = z.object({
  tag: z.string().min(1),
  amount: z.number().int().positive(),
  outcome: z.enum(["ok", "refuse", "boom"]).default("ok"),
});
export type Input = z.input<typeof input>;

async function start(i: z.infer<typeof input>): Promise<void> {
  executions.set(i.tag, (executions.get(i.tag) ?? 0) + 1);
  await hooks.get(i.tag)?.("before");
  if (i.outcome === "refuse") throw new TRPCError({ code: "FORBIDDEN", message: "Refused by a test rule." });
  if (i.outcome === "boom") throw new Error("an unexpected failure");
}

const t = initTRPC.context<IdempotencyContext>().create();

export function createApp(sql: Sql, defaults: ProcedureOptions = {}) {
  const idempotency = createIdempotencyProcedures(createRuntime({ sql, defaults }));
  const router = t.router({
    deposit: t.procedure
      .input(input)
      .concat(idempotency.atomic())
      .mutation(async ({ ctx, input: i }) => {
        await start(i);
        const [row] = await ctx.idempotency.tx<{ id: string }[]>`
          insert into effects (tenant_id, key, tag, note, amount)
          values (${ctx.tenant.id}, ${ctx.idempotency.key}, ${i.tag}, 'deposit', ${i.amount}) returning id`;
        return { effectId: Number(row!.id), amount: i.amount };
      }),
    pay: t.procedure
      .input(input)
      .concat(idempotency.recoverable())
      .mutation(async ({ ctx, input: i }) => {
        await start(i);
        const h = ctx.idempotency;
        const recorded = await h.phase("recorded", async (tx) => {
          const [row] = await tx<{ id: string }[]>`
            insert into effects (tenant_id, key, tag, note, amount)
            values (${ctx.tenant.id}, ${h.key}, ${i.tag}, 'recorded', ${i.amount}) returning id`;
          return { effectId: Number(row!.id) };
        });
        await sql`insert into downstream_calls (tag, downstream_key) values (${i.tag}, ${h.downstreamKey})`;
        await hooks.get(i.tag)?.("between");
        return h.phase("charged", async (tx) => {
          await tx`insert into effects (tenant_id, key, tag, note, amount) values (${ctx.tenant.id}, ${h.key}, ${i.tag}, 'charged', ${i.amount})`;
          return { effectId: recorded.effectId, amount: i.amount };
        });
      }),
  });
  return { router, createCaller: t.createCallerFactory(router) };
}

export type Flavour = "deposit" | "pay";
export const FLAVOURS: { procedure: Flavour; flavour: string }[] = [
  { procedure: "deposit", flavour: "atomic" },
  { procedure: "pay", flavour: "recoverable" },
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
export async function serve(sql: Sql, defaults: ProcedureOptions = {}, port = 0): Promise<Served> {
  const server = createHTTPServer({
    router: createApp(sql, defaults).router,
    createContext: ({ req }) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
      return { headers, tenant: { id: headers.get("x-tenant") ?? "t1" } };
    },
    responseMeta: ({ ctx }) => ({ headers: idempotencyHeaders(ctx) }),
  });
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export type Answer = { status: number; body: string; replayed: boolean };

/** One POST of `body` to `procedure`, on a connection of its own. */
export async function post(
  base: string,
  procedure: Flavour,
  key: string | undefined,
  body: Input,
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
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.text(), replayed: res.headers.get("idempotent-replayed") === "true" };
}

/** The rows a tag's executions left, by note. */
export async function effectsOf(sql: Sql, tag: string): Promise<Record<string, number>> {
  const rows = await sql<{ note: string; n: number }[]>`select note, count(*)::int as n from effects where tag = ${tag} group by note`;
  return Object.fromEntries(rows.map((r) => [r.note, r.n]));
}

export const downstreamCallsOf = (sql: Sql, tag: string) =>
  sql<{ downstream_key: string }[]>`select downstream_key from downstream_calls where tag = ${tag} order by id`.then((rows) =>
    rows.map((r) => r.downstream_key),
  );

let counter = 0;
/** A tag (and key) no other test or run uses. */
export const fresh = (what: string) => `${what}-${process.pid}-${Date.now().toString(36)}-${++counter}`;

/** What one execution of each flavour leaves. */
export const ONE_EXECUTION: Record<Flavour, Record<string, number>> = { deposit: { deposit: 1 }, pay: { recorded: 1, charged: 1 } };

/**
 * A holder that dies with `key` in progress: test/holder-child.ts serves the
 * app in a process of its own, takes the key and stops at `point`, and is
 * SIGKILLed there.
 */
export async function crashHolder(url: string, leaseMs: number, procedure: Flavour, key: string, point: Point): Promise<void> {
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
  for (let i = 0; i < 300 && !out.includes("holding") && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50));
  child.kill("SIGKILL");
  await exited;
  if (!out.includes("holding")) throw new Error(`the holder never reached "${point}" (${out.trim() || "no output"})`);
}

/** Sends until the answer is not a 409 (the key still held, or its lease still running), for up to `ms`. */
export async function retryUntilDecided(base: string, procedure: Flavour, key: string, body: Input, ms: number): Promise<Answer> {
  const deadline = Date.now() + ms;
  for (;;) {
    const answer = await post(base, procedure, key, body);
    if (answer.status !== 409 || Date.now() > deadline) return answer;
    await new Promise((r) => setTimeout(r, 200));
  }
}
