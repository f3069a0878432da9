/**
 * `accounts.deposit` and `accounts.withdraw`: the balance is changed only by
 * one conditional UPDATE in the key's transaction, together with the ledger
 * entries and the stored movement, so two withdrawals racing for the same
 * money cannot both succeed and the balance never goes below zero.
 */
import { and, eq, gte, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { accounts } from "../../db/schema";
import { NotFoundError, RuleViolationError } from "../errors";
import { Book, transfer, type Ledger } from "../ledger/post";
import { formatMinor } from "../money";
import { accountOf } from "./account";
import type { MoveInput } from "./move.schema";
import { MovementType, recordMovement } from "./movements";

export async function moveMoney(
  ctx: { ledger: Ledger; tenant: { id: string }; idempotency: { tx: Db; key: string } },
  input: MoveInput,
  type: MovementType,
) {
  const { tx, key } = ctx.idempotency;
  const tenantId = ctx.tenant.id;
  const withdrawing = type === MovementType.Withdrawal;
  // The check and the change are one statement: a concurrent withdrawal waits on the row and re-checks.
  const [account] = await tx
    .update(accounts)
    .set({ balanceMinor: withdrawing ? sql`${accounts.balanceMinor} - ${input.amount}` : sql`${accounts.balanceMinor} + ${input.amount}` })
    .where(
      and(
        eq(accounts.id, input.id),
        eq(accounts.tenantId, tenantId),
        eq(accounts.currency, input.currency),
        withdrawing ? gte(accounts.balanceMinor, input.amount) : undefined,
      ),
    )
    .returning();
  if (!account) return refuse(tx, tenantId, input, withdrawing);
  const customer = Book.customerBalance(input.id);
  await ctx.ledger.post(tx, {
    tenantId,
    currency: input.currency,
    cause: { idempotencyKey: key },
    links: { accountId: input.id },
    lines: withdrawing ? transfer(customer, Book.cash, input.amount) : transfer(Book.cash, customer, input.amount),
  });
  return recordMovement(tx, {
    tenantId,
    accountId: input.id,
    type,
    amountMinor: input.amount,
    currency: input.currency,
    balanceAfterMinor: account.balanceMinor,
    idempotencyKey: key,
  });
}

/** Why a conditional update touched nothing: the account is not the caller's, the currency differs, or the money is not there. */
async function refuse(tx: Db, tenantId: string, input: MoveInput, withdrawing: boolean): Promise<never> {
  const account = await accountOf(tx, tenantId, input.id);
  if (account.currency !== input.currency) {
    throw new RuleViolationError("currency-mismatch", `The account holds ${account.currency}, not ${input.currency}.`, {
      errors: [{ field: "currency", message: `must be ${account.currency}` }],
    });
  }
  if (withdrawing) {
    throw new RuleViolationError(
      "insufficient-funds",
      `The balance of ${formatMinor(account.balanceMinor)} ${account.currency} does not cover ${formatMinor(input.amount)}.`,
      {
        balance: formatMinor(account.balanceMinor),
      },
    );
  }
  throw new NotFoundError("account", input.id);
}
