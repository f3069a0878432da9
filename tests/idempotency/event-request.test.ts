/**
 * `onEvent(event, request)`: every event of a call reaches the sink with
 * that call's own tRPC context, so a plug-in finds there what an outer
 * middleware placed for the call (server/observability files each event
 * under the request's scope this way). A second call on the key arrives
 * while the first holds it, so their events interleave; each must still
 * arrive with its own context, and so must a later replay's.
 *
 * The runtime's `around` hooks get the same context: `call` around each
 * call's whole work, `handler` around the handler's run, and only where the
 * handler runs (a replay and a refusal get `call` alone).
 */
import { createIdempotencyProcedures, IdempotencyEventType as E, type IdempotencyEvent } from "@exactly-once/trpc";
import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import { createContextInner, idempotencyRuntime } from "../../server/app";
import { createCallerFactory, router, tenantProcedure } from "../../server/trpc";
import { effects, ensureEffectsTable, input, newTenant, uniqueKey, type TestTenant } from "./fixture";

/** What an outer middleware places in a call's context: the call's own mark. */
const MARK = Symbol("call");
const seen: { type: IdempotencyEvent["type"]; mark: unknown }[] = [];
const procedures = createIdempotencyProcedures({
  ...idempotencyRuntime,
  onEvent: (event, request) => seen.push({ type: event.type, mark: (request as { [MARK]?: unknown } | undefined)?.[MARK] }),
});

/** Holds the first call after its write, so the second runs and commits while the first is still in its handler. */
let holdFirst: Promise<void> | undefined;
let firstWrote: (() => void) | undefined;
const marked = tenantProcedure.use(({ ctx, next }) => next({ ctx: { [MARK]: ctx.headers.get("x-call") } }));
const testRouter = router({
  pay: marked
    .meta({ idempotent: true })
    .input(input)
    .concat(procedures.atomic({ waitMs: 0 }))
    .mutation(async ({ ctx, input: i }) => {
      await ctx.idempotency.tx.insert(effects).values({ tenantId: ctx.tenant.id, key: ctx.idempotency.key, note: i.tag, amount: i.amount });
      firstWrote?.();
      await holdFirst;
      return { tag: i.tag };
    }),
});
const createCaller = createCallerFactory(testRouter);

/** What the `around` hooks saw, in order: the call's mark, the stretch, and whether it began or ended. */
const stretches: string[] = [];
const markOf = (request: object) => (request as { [MARK]?: unknown })[MARK];
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
const hooked = createIdempotencyProcedures({ ...idempotencyRuntime, around: { call: logged("call"), handler: logged("handler") } });
const hookedRouter = router({
  pay: marked
    .meta({ idempotent: true })
    .input(input)
    .concat(hooked.atomic())
    .mutation(async ({ ctx, input: i }) => {
      stretches.push(`${String(markOf(ctx))} handler writes`);
      await ctx.idempotency.tx.insert(effects).values({ tenantId: ctx.tenant.id, key: ctx.idempotency.key, note: i.tag, amount: i.amount });
      if (i.tag.startsWith("refuse")) throw new TRPCError({ code: "BAD_REQUEST", message: "nothing to pay" });
      return { tag: i.tag };
    }),
});
const createHookedCaller = createCallerFactory(hookedRouter);
const hookedCaller = async (mark: string, key?: string) =>
  createHookedCaller(
    await createContextInner({ tenant, headers: new Headers({ ...(key ? { "Idempotency-Key": key } : {}), "x-call": mark }) }),
  );

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("event-request");
});

const call = async (key: string, mark: string) =>
  createCaller(await createContextInner({ tenant, headers: new Headers({ "Idempotency-Key": key, "x-call": mark }) })).pay({
    tag: key,
    amount: 1,
  });

describe("onEvent's request", () => {
  it("is the context of the call each event belongs to, also while two calls on one key interleave", async () => {
    for (let round = 0; round < 3; round++) {
      const key = uniqueKey("event-request");
      seen.length = 0;
      let release!: () => void;
      holdFirst = new Promise((resolve) => (release = resolve));
      const wrote = new Promise<void>((resolve) => (firstWrote = resolve));
      const first = call(key, "first");
      // The first is in its handler, its key row not yet written (that comes with its COMMIT); the second runs and commits.
      await wrote;
      holdFirst = undefined;
      firstWrote = undefined;
      expect(await call(key, "second")).toEqual({ tag: key });
      release();
      // The first's INSERT meets the second's row: it waited there, then replays the second's answer.
      expect(await first).toEqual({ tag: key });
      expect(await call(key, "third")).toEqual({ tag: key });
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
  it("run around each call and, where it runs, around its handler, with the call's context", async () => {
    for (let round = 0; round < 3; round++) {
      const key = uniqueKey("around");
      stretches.length = 0;
      expect(await (await hookedCaller("first", key)).pay({ tag: key, amount: 1 })).toEqual({ tag: key });
      expect(await (await hookedCaller("retry", key)).pay({ tag: key, amount: 1 })).toEqual({ tag: key });
      await expect((await hookedCaller("keyless")).pay({ tag: key, amount: 1 })).rejects.toThrow(/Idempotency-Key/);
      const refused = uniqueKey("refuse");
      await expect((await hookedCaller("refused", refused)).pay({ tag: refused, amount: 1 })).rejects.toThrow(/nothing to pay/);
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
