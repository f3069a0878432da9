/** `accounts.movements`: an account's deposits and withdrawals, newest first; another tenant's account is not found. */
import type { z } from "zod";
import type { Db } from "../../db/client";
import { accountOf } from "./account";
import { movementsOf } from "./movements";
import type { movementsInput } from "./movements.schema";

export async function listMovements(ctx: { db: Db; tenant: { id: string } }, input: z.infer<typeof movementsInput>) {
  await accountOf(ctx.db, ctx.tenant.id, input.id);
  return { data: await movementsOf(ctx.db, ctx.tenant.id, input.id, input.limit) };
}
