/**
 * The benchmark's router, built on the app's real procedures: `plain` and
 * `wrapped` do the same business write (a payment and its two balanced ledger
 * entries in one transaction), the first the ordinary Drizzle way and the
 * second through the idempotency middleware; `floor` is the least any design
 * that stores a result can do (the plain transaction plus one INSERT of the
 * completed key row, pipelined with COMMIT: no lookup, no lock); `read` reads
 * one payment back, the baseline a replay is compared with. `recoverable`
 * calls out (a call that does nothing), then does the same write in the
 * recoverable flavour's `finish`, and `recoverableFloor` is that flavour's floor: the
 * claim committed on its own, then the write and the key's completion in
 * one transaction (two commits, no lookup, no lock, no lease renewal).
 */
import { and, eq } from "drizzle-orm";
import { z } from "zod";
import type { Database, Db } from "../db/client";
import { ledgerEntries, payments, PaymentStatus } from "../db/schema";
import { fingerprint, IDEMPOTENCY_KEY_HEADER, KeyState } from "@exactly-once/trpc";
import { newId } from "../server/ids";
import type { RestMeta } from "../server/meta";
import type { ReservedSql } from "postgres";
import { idempotentProcedure, recoverableProcedure, router, tenantProcedure } from "../server/trpc";

export const paymentInput = z.object({
  amountMinor: z.number().int().positive(),
  currency: z.string().length(3),
  destination: z.string().min(1),
});
export type PaymentInput = z.infer<typeof paymentInput>;

const rest = (method: RestMeta["method"], path: `/${string}`, status = 200): { rest: RestMeta } => ({
  rest: { method, path, status, summary: "benchmark", tags: ["bench"] },
});

/** What caused the ledger entries: exactly one of the two is set (the `ledger_cause` check). */
type Cause = { idempotencyKey: string; eventId?: undefined } | { eventId: string; idempotencyKey?: undefined };

/** What the writes answer and the read reads back. */
const answer = {
  id: payments.id,
  status: payments.status,
  amountMinor: payments.amountMinor,
  currency: payments.currency,
  createdAt: payments.createdAt,
};

/** The business write both mutations share, so they differ only in how they are wrapped. */
export async function recordPayment(tx: Pick<Db, "insert">, tenantId: string, i: PaymentInput, paymentId: string, cause: Cause) {
  const [row] = await tx
    .insert(payments)
    .values({
      id: paymentId,
      tenantId,
      status: PaymentStatus.Succeeded,
      amountMinor: i.amountMinor,
      amountCapturedMinor: i.amountMinor,
      currency: i.currency,
      destination: i.destination,
      capture: "automatic",
      idempotencyKey: cause.idempotencyKey ?? null,
    })
    .returning(answer);
  const transactionId = newId("ltx");
  const entry = { tenantId, transactionId, amountMinor: i.amountMinor, currency: i.currency, paymentId, ...cause };
  await tx.insert(ledgerEntries).values([
    { ...entry, id: newId("led"), ledgerAccount: "psp_clearing", direction: "debit" },
    { ...entry, id: newId("led"), ledgerAccount: "sales", direction: "credit" },
  ]);
  return { ...row!, createdAt: row!.createdAt.toISOString() };
}

const keyOf = (ctx: { headers: Headers }) => ctx.headers.get(IDEMPOTENCY_KEY_HEADER) ?? "";

/** The provider's call, a no-op: the recoverable rows measure the flavour around a call out, not the call. */
const callOut = async (_downstreamKey: string) => undefined;

/**
 * The business write and the key row's statement (`keyRow`, given the write's
 * output) in one transaction on a reserved connection, the statement pipelined
 * with COMMIT: the floors' own transaction.
 */
async function inFloorTransaction(
  ctx: { pool: Database; tenant: { id: string } },
  input: PaymentInput,
  key: string,
  keyRow: (conn: ReservedSql, output: Awaited<ReturnType<typeof recordPayment>>) => PromiseLike<unknown>,
) {
  const conn = await ctx.pool.reserve();
  try {
    await conn.unsafe("begin");
    const output = await recordPayment(ctx.pool.drizzleOn(conn), ctx.tenant.id, input, newId("pay"), { idempotencyKey: key });
    await Promise.all([keyRow(conn, output), conn.unsafe("commit")]);
    return output;
  } catch (error) {
    await conn.unsafe("rollback");
    throw error;
  } finally {
    conn.release();
  }
}

export const benchRouter = router({
  plain: tenantProcedure
    .meta(rest("POST", "/bench/plain", 201))
    .input(paymentInput)
    .mutation(({ ctx, input }) => {
      const id = newId("pay");
      return ctx.pool.transaction((tx) => recordPayment(tx, ctx.tenant.id, input, id, { eventId: `bench_${id}` }));
    }),
  wrapped: idempotentProcedure(paymentInput)
    .meta(rest("POST", "/bench/wrapped", 201))
    .mutation(({ ctx, input }) =>
      recordPayment(ctx.idempotency.tx, ctx.tenant.id, input, newId("pay"), { idempotencyKey: ctx.idempotency.key }),
    ),
  floor: tenantProcedure
    .meta(rest("POST", "/bench/floor", 201))
    .input(paymentInput)
    .mutation(async ({ ctx, input, path }) => {
      const key = keyOf(ctx);
      const fp = fingerprint(path, input);
      return inFloorTransaction(
        ctx,
        input,
        key,
        (conn, output) => conn`
        insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, completed_at, expires_at)
        values (${ctx.tenant.id}, ${key}, ${path}, ${fp.hash}, ${fp.request}, ${KeyState.Completed}, 201, ${JSON.stringify(output)}, now(), now() + interval '1 day')`,
      );
    }),
  recoverable: recoverableProcedure(paymentInput)
    .meta(rest("POST", "/bench/recoverable", 201))
    .mutation(async ({ ctx, input }) => {
      const h = ctx.idempotency;
      await callOut(h.downstreamKey);
      return h.finish("recorded", (tx) => recordPayment(tx, ctx.tenant.id, input, newId("pay"), { idempotencyKey: h.key }));
    }),
  recoverableFloor: tenantProcedure
    .meta(rest("POST", "/bench/recoverable-floor", 201))
    .input(paymentInput)
    .mutation(async ({ ctx, input, path }) => {
      const key = keyOf(ctx);
      const fp = fingerprint(path, input);
      await ctx.sql`
        insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, locked_until, expires_at)
        values (${ctx.tenant.id}, ${key}, ${path}, ${fp.hash}, ${fp.request}, ${KeyState.InProgress}, now() + interval '30 seconds', now() + interval '1 day')`;
      await callOut(key);
      return inFloorTransaction(
        ctx,
        input,
        key,
        (conn, output) => conn`
        update idempotency_keys set state = ${KeyState.Completed}, locked_until = null, response_status = 201, response_body = ${JSON.stringify(output)}, completed_at = now()
        where tenant_id = ${ctx.tenant.id} and key = ${key}`,
      );
    }),
  read: tenantProcedure
    .meta(rest("GET", "/bench/read"))
    .input(z.object({ id: z.string().min(1) }))
    .query(async ({ ctx, input }) => {
      const [row] = await ctx.db
        .select(answer)
        .from(payments)
        .where(and(eq(payments.tenantId, ctx.tenant.id), eq(payments.id, input.id)))
        .limit(1);
      if (!row) throw new Error(`benchmark payment ${input.id} is missing`);
      return { ...row, createdAt: row.createdAt.toISOString() };
    }),
});
