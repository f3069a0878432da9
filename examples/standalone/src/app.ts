/**
 * The example's tRPC app, made exactly-once by @exactly-once/trpc as its
 * guide says, in its two flavours:
 * - `deposit` (atomic, the guide's "Wrap a mutation"): its write commits in
 *   one transaction with the stored result;
 * - `pay` (recoverable, the guide's recovery-point example): records a
 *   transfer, calls a payment provider with the key the middleware derives
 *   for it, and records the charge: two recovery points around a call that
 *   can fail or never return.
 */
import { createIdempotencyProcedures, createRuntime, type IdempotencyContext } from "@exactly-once/trpc";
import { initTRPC, TRPCError } from "@trpc/server";
import type { Sql } from "postgres";
import { z } from "zod";

/** The provider: charges at most once per `key` (its own idempotency), however often it is called. */
export type Provider = { charge: (charge: { key: string; amount: number }) => Promise<{ chargeId: string }> };

const t = initTRPC.context<IdempotencyContext>().create();

export const CLOSED_ACCOUNT = "acct_closed";

export function createApp(sql: Sql, provider: Provider, options: { leaseMs?: number } = {}) {
  const idempotency = createIdempotencyProcedures(createRuntime({ sql, defaults: options }));

  const router = t.router({
    deposit: t.procedure
      .input(z.object({ account: z.string().min(1), amount: z.number().int().positive() }))
      .concat(idempotency.atomic())
      .mutation(async ({ ctx, input }) => {
        const [row] = await ctx.idempotency
          .tx`insert into deposits (key, account, amount) values (${ctx.idempotency.key}, ${input.account}, ${input.amount}) returning id`;
        return { depositId: Number(row!.id), ...input };
      }),
    pay: t.procedure
      .input(z.object({ amount: z.number().int().positive(), to: z.string().min(1) }))
      .concat(idempotency.recoverable())
      .mutation(async ({ ctx, input }) => {
        // A business refusal after the claim: final, so it is stored and every retry gets it back.
        if (input.to === CLOSED_ACCOUNT) throw new TRPCError({ code: "FORBIDDEN", message: "The recipient's account is closed." });
        const transfer = await ctx.idempotency.phase("recorded", async (tx) => {
          const [row] =
            await tx`insert into transfers (key, amount, recipient) values (${ctx.idempotency.key}, ${input.amount}, ${input.to}) returning id`;
          return { id: Number(row!.id) };
        });
        const { chargeId } = await provider.charge({ key: ctx.idempotency.downstreamKey, amount: input.amount });
        return ctx.idempotency.finish("charged", async (tx) => {
          await tx`update transfers set charge_id = ${chargeId} where id = ${transfer.id}`;
          return { transferId: transfer.id, chargeId, amount: input.amount, to: input.to };
        });
      }),
  });
  return { router, createCaller: t.createCallerFactory(router) };
}

export type AppRouter = ReturnType<typeof createApp>["router"];

/** The example's own tables: what `deposit` and `pay` write, and what the provider stand-in charged. */
export async function createTables(sql: Sql): Promise<void> {
  await sql`create table if not exists deposits (id bigserial primary key, key text not null, account text not null, amount integer not null)`;
  await sql`create table if not exists transfers (id bigserial primary key, key text not null, amount integer not null, recipient text not null, charge_id text)`;
  await sql`create table if not exists provider_charges (key text primary key, amount integer not null, calls integer not null default 1)`;
}

/** A provider stand-in in the same database: a second call with a key it knows charges nothing. */
export const databaseProvider = (sql: Sql): Provider => ({
  charge: async ({ key, amount }) => {
    await sql`insert into provider_charges (key, amount) values (${key}, ${amount}) on conflict (key) do update set calls = provider_charges.calls + 1`;
    return { chargeId: `ch_${key.slice(0, 12)}` };
  },
});
