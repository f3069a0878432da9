/**
 * Accounts with a balance: create, get, deposit, withdraw, and the stored
 * deposits and withdrawals read back. Handlers take only what they use from
 * the context; shared logic lives in account.ts and movements.ts.
 */
import { z } from "zod";
import { idInput } from "../input";
import { idempotentProcedure, router, tenantProcedure } from "../trpc";
import { accountOf, accountSchema, presentAccount } from "./account";
import { createAccount } from "./create.handler";
import { createAccountInput } from "./create.schema";
import { moveMoney } from "./move.handler";
import { moveInput } from "./move.schema";
import { listMovements } from "./movements.handler";
import { movementsInput } from "./movements.schema";
import { movementOf, movementSchema, MovementType } from "./movements";

export const accountsRouter = router({
  create: idempotentProcedure(createAccountInput)
    .meta({
      rest: { method: "POST", path: "/v1/accounts", status: 201, summary: "Open an account with a zero balance", tags: ["accounts"] },
    })
    .output(accountSchema)
    .mutation(({ ctx, input }) => createAccount(ctx, input)),

  get: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/accounts/{id}", summary: "An account and its balance", tags: ["accounts"] } })
    .input(idInput)
    .output(accountSchema)
    .query(async ({ ctx, input }) => presentAccount(await accountOf(ctx.db, ctx.tenant.id, input.id))),

  deposit: idempotentProcedure(moveInput)
    .meta({
      rest: {
        method: "POST",
        path: "/v1/accounts/{id}/deposits",
        status: 201,
        summary: "Add money to an account",
        tags: ["accounts"],
        refusals: ["currency-mismatch"],
      },
    })
    .output(movementSchema)
    .mutation(({ ctx, input }) => moveMoney(ctx, input, MovementType.Deposit)),

  withdraw: idempotentProcedure(moveInput)
    .meta({
      rest: {
        method: "POST",
        path: "/v1/accounts/{id}/withdrawals",
        status: 201,
        summary: "Take money out of an account; never below zero",
        tags: ["accounts"],
        refusals: ["currency-mismatch", "insufficient-funds"],
      },
    })
    .output(movementSchema)
    .mutation(({ ctx, input }) => moveMoney(ctx, input, MovementType.Withdrawal)),

  movements: tenantProcedure
    .meta({
      rest: {
        method: "GET",
        path: "/v1/accounts/{id}/movements",
        summary: "An account's deposits and withdrawals, newest first",
        tags: ["accounts"],
      },
    })
    .input(movementsInput)
    .output(z.object({ data: z.array(movementSchema) }))
    .query(({ ctx, input }) => listMovements(ctx, input)),

  getDeposit: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/deposits/{id}", summary: "A deposit", tags: ["accounts"] } })
    .input(idInput)
    .output(movementSchema)
    .query(({ ctx, input }) => movementOf(ctx.db, ctx.tenant.id, MovementType.Deposit, input.id)),

  getWithdrawal: tenantProcedure
    .meta({ rest: { method: "GET", path: "/v1/withdrawals/{id}", summary: "A withdrawal", tags: ["accounts"] } })
    .input(idInput)
    .output(movementSchema)
    .query(({ ctx, input }) => movementOf(ctx.db, ctx.tenant.id, MovementType.Withdrawal, input.id)),
});
