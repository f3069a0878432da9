/**
 * The key row's trace id (`traceId` of the runtime, `trace_id`): a claim
 * stores the trace of the request that took the key, in both flavours; a
 * takeover keeps the first request's; an expired key taken anew gets its new
 * request's; a request whose trace is not recorded stores none.
 */
import { createIdempotencyProcedures } from "@exactly-once/trpc";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { createContextInner, idempotencyRuntime } from "../../server/app";
import { createCallerFactory, router, tenantProcedure } from "../../server/trpc";
import { effects, ensureEffectsTable, input, newTenant, uniqueKey, type TestTenant } from "./fixture";

/** The trace the next request runs in, as the runtime's `traceId` reports it. */
let currentTrace: string | undefined;
/** Keys whose next recoverable attempt fails after its first phase. */
const failOnce = new Set<string>();
const traced = createIdempotencyProcedures({ ...idempotencyRuntime, traceId: () => currentTrace });

const meta = { idempotent: true };
const tracedRouter = router({
  atomic: tenantProcedure
    .meta(meta)
    .input(input)
    .concat(traced.atomic({ waitMs: 0 }))
    .mutation(async ({ ctx, input: i }) => {
      await ctx.idempotency.tx.insert(effects).values({ tenantId: ctx.tenant.id, key: ctx.idempotency.key, note: i.tag, amount: i.amount });
      return { tag: i.tag };
    }),
  recoverable: tenantProcedure
    .meta(meta)
    .input(input)
    .concat(traced.recoverable({ waitMs: 0 }))
    .mutation(async ({ ctx, input: i }) => {
      await ctx.idempotency.phase("recorded", async (tx) => {
        await tx.insert(effects).values({ tenantId: ctx.tenant.id, key: ctx.idempotency.key, note: i.tag, amount: i.amount });
        return null;
      });
      // After a committed phase an unexpected error releases the key: the retry takes it over.
      if (failOnce.delete(ctx.idempotency.key)) throw new Error("an unexpected failure");
      return { tag: i.tag };
    }),
});
const createCaller = createCallerFactory(tracedRouter);

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("trace-id");
});

async function call(procedure: "atomic" | "recoverable", key: string, traceId: string | undefined, i: { tag: string; amount: number }) {
  currentTrace = traceId;
  const headers = new Headers({ "Idempotency-Key": key });
  const c = createCaller(await createContextInner({ tenant, headers }));
  return c[procedure](i);
}

async function traceOf(key: string) {
  const [row] = await database().sql<{ trace_id: string | null; fence: string }[]>`
    select trace_id, fence from idempotency_keys where tenant_id = ${tenant.id} and key = ${key}`;
  return row;
}

const trace = (n: number) => n.toString(16).padStart(32, "0");

describe("the key row's trace id", () => {
  it.each(["atomic", "recoverable"] as const)(
    "%s: the claim stores the trace of the request that took the key; a replay changes nothing",
    async (procedure) => {
      const key = uniqueKey("trace-claim");
      await call(procedure, key, trace(1), { tag: key, amount: 1 });
      expect(await traceOf(key)).toEqual({ trace_id: trace(1), fence: "1" });
      await call(procedure, key, trace(2), { tag: key, amount: 1 });
      expect(await traceOf(key)).toEqual({ trace_id: trace(1), fence: "1" });
    },
  );

  it.each(["atomic", "recoverable"] as const)("%s: a request whose trace is not recorded stores none", async (procedure) => {
    const key = uniqueKey("trace-none");
    await call(procedure, key, undefined, { tag: key, amount: 1 });
    expect(await traceOf(key)).toEqual({ trace_id: null, fence: "1" });
  });

  it("a takeover keeps the trace of the request that first took the key", async () => {
    const key = uniqueKey("trace-takeover");
    failOnce.add(key);
    await expect(call("recoverable", key, trace(3), { tag: key, amount: 1 })).rejects.toThrow("an unexpected failure");
    await call("recoverable", key, trace(4), { tag: key, amount: 1 });
    expect(await traceOf(key)).toEqual({ trace_id: trace(3), fence: "2" });
  });

  it.each(["atomic", "recoverable"] as const)("%s: an expired key taken anew gets its new request's trace", async (procedure) => {
    const key = uniqueKey("trace-expired");
    await call(procedure, key, trace(5), { tag: key, amount: 1 });
    await database()
      .sql`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = ${tenant.id} and key = ${key}`;
    await call(procedure, key, trace(6), { tag: key, amount: 2 });
    expect(await traceOf(key)).toEqual({ trace_id: trace(6), fence: "2" });
  });
});
