/** An account as the API shows it, and the tenant-scoped read every accounts handler starts from. */
import { and, eq } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client";
import { accounts } from "../../db/schema";
import { NotFoundError } from "../errors";
import { formatMinor } from "../money";

export const accountSchema = z.object({ id: z.string(), balance: z.string(), currency: z.string(), createdAt: z.iso.datetime() });

export const presentAccount = (a: typeof accounts.$inferSelect): z.infer<typeof accountSchema> => ({
  id: a.id,
  balance: formatMinor(a.balanceMinor),
  currency: a.currency,
  createdAt: a.createdAt.toISOString(),
});

export async function accountOf(db: Db, tenantId: string, id: string) {
  const [account] = await db
    .select()
    .from(accounts)
    .where(and(eq(accounts.id, id), eq(accounts.tenantId, tenantId)));
  if (!account) throw new NotFoundError("account", id);
  return account;
}
