/** `accounts.create`: an account with a zero balance, written in the key's transaction. */
import type { z } from "zod";
import type { Db } from "../../db/client";
import { accounts } from "../../db/schema";
import { newId } from "../ids";
import { presentAccount } from "./account";
import type { createAccountInput } from "./create.schema";

export async function createAccount(ctx: { tenant: { id: string }; idempotency: { tx: Db } }, input: z.infer<typeof createAccountInput>) {
  const [account] = await ctx.idempotency.tx
    .insert(accounts)
    .values({ id: newId("acct"), tenantId: ctx.tenant.id, currency: input.currency })
    .returning();
  return presentAccount(account!);
}
