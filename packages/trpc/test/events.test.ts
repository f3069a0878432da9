/**
 * What the runtime tells the app. `onEvent(event, request)`: every event of
 * a call reaches the sink with that call's own tRPC context, so a plug-in
 * finds there what an outer middleware placed for the call; a second call on
 * the key arrives while the first holds it, so their events interleave, and
 * each must still arrive with its own context, as must a later replay's.
 * The `around` hooks get the same context: `call` around each call's whole
 * work, `handler` around the handler's run, and only where the handler runs
 * (a replay and a refusal get `call` alone). And which events a key's
 * replays, mismatches, releases and takeovers report.
 */
import { initTRPC, TRPCError } from "@trpc/server";
import type { ReservedSql, Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { z } from "zod";
import {
  createIdempotencyProcedures,
  createRuntime,
  IdempotencyEventType as E,
  type IdempotencyContext,
  type IdempotencyEvent,
  type RuntimeOptions,
} from "../src/index.js";
import { fresh, openDatabase, post, recorder, serve, type Served } from "./harness.js";

/** What an outer middleware places in a call's context: the call's own mark. */
const MARK = Symbol("call");
type Ctx = IdempotencyContext & { mark?: string };
type Extra = Partial<RuntimeOptions<ReservedSql>>;
const markOf = (request: object | undefined) => (request as { [MARK]?: unknown } | undefined)?.[MARK];

let sql: Sql;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

/**
 * An atomic `pay` on a runtime with `extra` options, behind a middleware that marks each call's context with its
 * `mark`; built at its first call, once the database is open.
 */
function appWith(extra: Extra, handler: (ctx: IdempotencyContext, tag: string) => Promise<void>) {
  let createCaller: ReturnType<typeof build> | undefined;
  return (mark: string, key?: string) => (input: { tag: string }) =>
    (createCaller ??= build(extra, handler))({
      headers: new Headers(key ? { "idempotency-key": key } : {}),
      tenant: { id: "t1" },
      outcomes: [],
      mark,
    }).pay(input);
}

function build(extra: Extra, handler: (ctx: IdempotencyContext, tag: string) => Promise<void>) {
  const t = initTRPC.context<Ctx>().create();
  const procedures = createIdempotencyProcedures<ReservedSql, Ctx>(createRuntime<ReservedSql>({ sql, ...extra }));
  const marked = t.procedure.use(({ ctx, next }) => next({ ctx: { [MARK]: ctx.mark } }));
  const router = t.router({
    pay: marked
      .input(z.object({ tag: z.string() }))
      .concat(procedures.atomic({ waitMs: 0 }))
      .mutation(async ({ ctx, input }) => {
        await ctx.idempotency
          .tx`insert into effects (tenant_id, key, tag, note, amount) values (${ctx.tenant.id}, ${ctx.idempotency.key}, ${input.tag}, 'pay', 1)`;
        await handler(ctx, input.tag);
        return { tag: input.tag };
      }),
  });
  return t.createCallerFactory(router);
}

describe("onEvent's request", () => {
  const seen: { type: IdempotencyEvent["type"]; mark: unknown }[] = [];
  /** Holds the first call after its write, so the second runs and commits while the first is still in its handler. */
  let holdFirst: Promise<void> | undefined;
  let firstWrote: (() => void) | undefined;
  const call = appWith({ onEvent: (event, request) => seen.push({ type: event.type, mark: markOf(request) }) }, async () => {
    firstWrote?.();
    await holdFirst;
  });

  it("is the context of the call each event belongs to, also while two calls on one key interleave", async () => {
    for (let round = 0; round < 3; round++) {
      const key = fresh("event-request");
      seen.length = 0;
      let release!: () => void;
      holdFirst = new Promise((resolve) => (release = resolve));
      const wrote = new Promise<void>((resolve) => (firstWrote = resolve));
      const first = call("first", key)({ tag: key });
      // The first is in its handler, its key row not yet written (that comes with its COMMIT); the second runs and commits.
      await wrote;
      holdFirst = undefined;
      firstWrote = undefined;
      expect(await call("second", key)({ tag: key })).toEqual({ tag: key });
      release();
      // The first's INSERT meets the second's row: it waited there, then replays the second's answer.
      expect(await first).toEqual({ tag: key });
      expect(await call("third", key)({ tag: key })).toEqual({ tag: key });
      expect(seen).toEqual([
        { type: E.Claimed, mark: "second" },
        { type: E.Completed, mark: "second" },
        { type: E.Waited, mark: "first" },
        { type: E.Replayed, mark: "first" },
        { type: E.Replayed, mark: "third" },
      ]);
    }
  });
});

describe("the runtime's around hooks", () => {
  /** What the hooks saw, in order: the call's mark, the stretch, and whether it began or ended. */
  const stretches: string[] = [];
  const logged =
    (stretch: string) =>
    async <T>(request: object, run: () => Promise<T>): Promise<T> => {
      stretches.push(`${String(markOf(request))} ${stretch} begins`);
      try {
        return await run();
      } finally {
        stretches.push(`${String(markOf(request))} ${stretch} ends`);
      }
    };
  const call = appWith({ around: { call: logged("call"), handler: logged("handler") } }, async (ctx, tag) => {
    stretches.push(`${String(markOf(ctx))} handler writes`);
    if (tag.startsWith("refuse")) throw new TRPCError({ code: "BAD_REQUEST", message: "nothing to pay" });
  });

  it("run around each call and, where it runs, around its handler, with the call's context", async () => {
    for (let round = 0; round < 3; round++) {
      const key = fresh("around");
      stretches.length = 0;
      expect(await call("first", key)({ tag: key })).toEqual({ tag: key });
      expect(await call("retry", key)({ tag: key })).toEqual({ tag: key });
      await expect(call("keyless")({ tag: key })).rejects.toThrow(/Idempotency-Key/);
      const refused = fresh("refuse");
      await expect(call("refused", refused)({ tag: refused })).rejects.toThrow(/nothing to pay/);
      expect(stretches).toEqual([
        "first call begins",
        "first handler begins",
        "first handler writes",
        "first handler ends",
        "first call ends",
        "retry call begins",
        "retry call ends",
        "keyless call begins",
        "keyless call ends",
        "refused call begins",
        "refused handler begins",
        "refused handler writes",
        "refused handler ends",
        "refused call ends",
      ]);
    }
  });
});

describe("the events of a key", () => {
  const log = recorder();
  let app: Served;
  beforeAll(async () => {
    app = await serve(sql, {}, { onEvent: log.onEvent });
  });
  afterAll(async () => {
    await app?.close();
  });

  it("report claims, completions, replays, mismatches, releases and takeovers, in order", async () => {
    const key = fresh("events");
    await post(app.base, "deposit", key, { tag: key, amount: 1 });
    await post(app.base, "deposit", key, { tag: key, amount: 1 });
    await post(app.base, "deposit", key, { tag: key, amount: 2 });
    const boom = fresh("events-boom");
    await post(app.base, "deposit", boom, { tag: boom, amount: 1, outcome: "boom" });
    await post(app.base, "deposit", boom, { tag: boom, amount: 1, outcome: "boom" });
    expect(log.of(key).map((e) => e.type)).toEqual([E.Claimed, E.Completed, E.Replayed, E.Mismatch]);
    expect(log.of(boom).map((e) => e.type)).toEqual([E.Claimed, E.Released, E.Takeover, E.Released]);
  });
});
