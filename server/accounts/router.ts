/**
 * Accounts with a balance: create, deposit, withdraw, get. The balance is
 * changed only by conditional UPDATEs in the same transaction as the ledger
 * entries and the stored idempotent result, so two withdrawals racing for the
 * same money cannot both succeed and the balance never goes below zero.
 */
import { and, eq, gte, sql } from "drizzle-orm";
import { z } from "zod";
import { idInput, strictInput } from "../input";
import type { Db } from "../../db/client";
import { accounts } from "../../db/schema";
import { NotFoundError, RuleViolationError } from "../errors";
import { newId } from "../ids";
import { Book, postMovement, transfer } from "../ledger/post";
import { amountSchema, currencySchema, formatMinor } from "../money";
import { idempotentProcedure, router, tenantProcedure } from "../trpc";
import { movementOf, movementSchema, movementsOf, MovementType, recordMovement } from "./movements";

const accountSchema = z.object({ id: z.string(), balance: z.string(), currency: z.string(), createdAt: z.string() });

const present = (a: typeof accounts.$inferSelect) => ({ id: a.id, balance: formatMinor(a.balanceMinor), currency: a.currency, createdAt: a.createdAt.toISOString() });

async function accountOf(db: Db, tenantId: string, id: string) {
  const [account] = await db.select().from(accounts).where(and(eq(accounts.id, id), eq(accounts.tenantId, tenantId)));
  if (!account) throw new NotFoundError("account", id);
  return account;
}

const moveInput = strictInput({ id: z.string().min(1).max(64), amount: amountSchema, currency: currencySchema });

export const accountsRouter = router({
  create: idempotentProcedure(strictInput({ currency: currencySchema }))
    .meta({ rest: { method: "POST", path: "/v1/accounts", status: 201, summary: "Open an account with a zero balance", tags: ["accounts"] } })
    .output(accountSchema)
    .mutation(async ({ ctx, input }) => {
      const [account] = await ctx.idempotency.tx.insert(accounts).values({ id: newId("acct"), tenantId: ctx.tenant.id, currency: input.currency }).returning();
      return present(account!);
    }),

  get: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/accounts/{id}", summary: "An account and its balance", tags: ["accounts"] } })
    .input(idInput)
    .output(accountSchema)
    .query(async ({ ctx, input }) => present(await accountOf(ctx.db, ctx.tenant.id, input.id))),

  deposit: idempotentProcedure(moveInput)
    .meta({ rest: { method: "POST", path: "/v1/accounts/{id}/deposits", status: 201, summary: "Add money to an account", tags: ["accounts"] } })
    .output(movementSchema)
    .mutation(async ({ ctx, input }) => {
      const tx = ctx.idempotency.tx;
      const [account] = await tx
        .update(accounts)
        .set({ balanceMinor: sql`${accounts.balanceMinor} + ${input.amount}` })
        .where(and(eq(accounts.id, input.id), eq(accounts.tenantId, ctx.tenant.id), eq(accounts.currency, input.currency)))
        .returning();
      if (!account) await refuse(tx, ctx.tenant.id, input);
      await postMovement(tx, {
        tenantId: ctx.tenant.id,
        currency: input.currency,
        cause: { idempotencyKey: ctx.idempotency.key },
        links: { accountId: input.id },
        lines: transfer(Book.cash, Book.customerBalance(input.id), input.amount),
      });
      return recordMovement(tx, {
        tenantId: ctx.tenant.id,
        accountId: input.id,
        type: MovementType.Deposit,
        amountMinor: input.amount,
        currency: input.currency,
        balanceAfterMinor: account!.balanceMinor,
        idempotencyKey: ctx.idempotency.key,
      });
    }),

  withdraw: idempotentProcedure(moveInput)
    .meta({ rest: { method: "POST", path: "/v1/accounts/{id}/withdrawals", status: 201, summary: "Take money out of an account; never below zero", tags: ["accounts"] } })
    .output(movementSchema)
    .mutation(async ({ ctx, input }) => {
      const tx = ctx.idempotency.tx;
      // The check and the change are one statement: a concurrent withdrawal waits on the row and re-checks.
      const [account] = await tx
        .update(accounts)
        .set({ balanceMinor: sql`${accounts.balanceMinor} - ${input.amount}` })
        .where(and(eq(accounts.id, input.id), eq(accounts.tenantId, ctx.tenant.id), eq(accounts.currency, input.currency), gte(accounts.balanceMinor, input.amount)))
        .returning();
      if (!account) await refuse(tx, ctx.tenant.id, input, true);
      await postMovement(tx, {
        tenantId: ctx.tenant.id,
        currency: input.currency,
        cause: { idempotencyKey: ctx.idempotency.key },
        links: { accountId: input.id },
        lines: transfer(Book.customerBalance(input.id), Book.cash, input.amount),
      });
      return recordMovement(tx, {
        tenantId: ctx.tenant.id,
        accountId: input.id,
        type: MovementType.Withdrawal,
        amountMinor: input.amount,
        currency: input.currency,
        balanceAfterMinor: account!.balanceMinor,
        idempotencyKey: ctx.idempotency.key,
      });
    }),

  movements: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/accounts/{id}/movements", summary: "An account's deposits and withdrawals, newest first", tags: ["accounts"] } })
    .input(strictInput({ id: z.string().min(1).max(64), limit: z.coerce.number().int().min(1).max(100).default(10) }))
    .output(z.object({ data: z.array(movementSchema) }))
    .query(async ({ ctx, input }) => {
      await accountOf(ctx.db, ctx.tenant.id, input.id);
      return { data: await movementsOf(ctx.db, ctx.tenant.id, input.id, input.limit) };
    }),

  getDeposit: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/deposits/{id}", summary: "A deposit", tags: ["accounts"] } })
    .input(idInput)
    .output(movementSchema)
    .query(async ({ ctx, input }) => movementOf(ctx.db, ctx.tenant.id, MovementType.Deposit, input.id)),

  getWithdrawal: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/withdrawals/{id}", summary: "A withdrawal", tags: ["accounts"] } })
    .input(idInput)
    .output(movementSchema)
    .query(async ({ ctx, input }) => movementOf(ctx.db, ctx.tenant.id, MovementType.Withdrawal, input.id)),
});

/** Why a conditional update touched nothing: the account is not the caller's, the currency differs, or the money is not there. */
async function refuse(tx: Db, tenantId: string, input: z.infer<typeof moveInput>, withdrawing = false): Promise<never> {
  const account = await accountOf(tx, tenantId, input.id);
  if (account.currency !== input.currency) {
    throw new RuleViolationError("currency-mismatch", `The account holds ${account.currency}, not ${input.currency}.`, { errors: [{ field: "currency", message: `must be ${account.currency}` }] });
  }
  if (withdrawing) {
    throw new RuleViolationError("insufficient-funds", `The balance of ${formatMinor(account.balanceMinor)} ${account.currency} does not cover ${formatMinor(input.amount)}.`, {
      balance: formatMinor(account.balanceMinor),
    });
  }
  throw new NotFoundError("account", input.id);
}
