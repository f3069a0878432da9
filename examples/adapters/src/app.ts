/**
 * The router every adapter here serves: one atomic mutation, as the
 * package guide's "Wrap a mutation" writes it. What differs per adapter is
 * only how a request becomes the context the middleware reads (its headers
 * as a `Headers` and the scope of its keys) and how the headers of what the
 * middleware decided reach the answer (`responseMeta`): `contextOf` and
 * `answerHeaders` below, used by all three.
 */
import { createIdempotencyProcedures, createRuntime, outcomeHeaders, type IdempotencyContext } from "@exactly-once/trpc";
import { initTRPC } from "@trpc/server";
import type { Sql } from "postgres";
import { z } from "zod";

const t = initTRPC.context<IdempotencyContext>().create();

export function createRouter(sql: Sql) {
  const idempotency = createIdempotencyProcedures(createRuntime({ sql }));
  return t.router({
    deposit: t.procedure
      .input(z.object({ account: z.string().min(1), amount: z.number().int().positive() }))
      .concat(idempotency.atomic())
      .mutation(async ({ ctx, input }) => {
        const [row] = await ctx.idempotency
          .tx`insert into deposits (key, account, amount) values (${ctx.idempotency.key}, ${input.account}, ${input.amount}) returning id`;
        return { depositId: Number(row!.id), ...input };
      }),
  });
}

export type AppRouter = ReturnType<typeof createRouter>;

/** The context the middleware reads and adds its decisions to; keys are scoped by tenant (one constant scope in a single-tenant app). */
export const contextOf = (headers: Headers): IdempotencyContext => ({ headers, tenant: { id: "example" }, outcomes: [] });

/** Node's request headers (Express, Fastify) as the `Headers` the middleware reads. */
export function headersOf(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) if (typeof value === "string") headers.set(name, value);
  return headers;
}

/** What `responseMeta` sends: the headers of what the middleware decided (`Idempotent-Replayed: true` on a replay). */
export const answerHeaders = ({ ctx }: { ctx?: IdempotencyContext }) => ({ headers: outcomeHeaders(ctx) });

export async function createTables(sql: Sql): Promise<void> {
  await sql`create table if not exists deposits (id bigserial primary key, key text not null, account text not null, amount integer not null)`;
}
