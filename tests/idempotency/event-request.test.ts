/**
 * `onEvent(event, request)`: every event of a call reaches the sink with
 * that call's own tRPC context, so a plug-in finds there what an outer
 * middleware placed for the call (server/observability files each event
 * under the request's scope this way). A second call on the key arrives
 * while the first holds it, so their events interleave; each must still
 * arrive with its own context, and so must a later replay's.
 */
import { createIdempotencyProcedures, IdempotencyEventType as E, type IdempotencyEvent } from "@exactly-once/trpc";
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
