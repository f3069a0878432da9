/**
 * Deposits and withdrawals as records: each is written in the transaction
 * that changes the balance, so the id in the answer is one the client can
 * read back, and the stored movement says what the answer said.
 */
import { and, desc, eq } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client";
import { accountMovements, MovementType } from "../../db/schema";
import { NotFoundError } from "../errors";
import { newId } from "../ids";
import { formatMinor } from "../money";

export { MovementType };

export const movementSchema = z.object({
  id: z.string(),
  type: z.enum([MovementType.Deposit, MovementType.Withdrawal]),
  accountId: z.string(),
  amount: z.string(),
  currency: z.string(),
  balance: z.string(),
});
type MovementView = z.infer<typeof movementSchema>;

const ID_PREFIX: Record<MovementType, string> = { deposit: "dep", withdrawal: "wd" };

const present = (m: typeof accountMovements.$inferSelect): MovementView => ({
  id: m.id,
  type: m.type,
  accountId: m.accountId,
  amount: formatMinor(m.amountMinor),
  currency: m.currency,
  balance: formatMinor(m.balanceAfterMinor),
});

export async function recordMovement(
  tx: Db,
  m: {
    tenantId: string;
    accountId: string;
    type: MovementType;
    amountMinor: number;
    currency: string;
    balanceAfterMinor: number;
    idempotencyKey: string;
  },
): Promise<MovementView> {
  const [row] = await tx
    .insert(accountMovements)
    .values({ id: newId(ID_PREFIX[m.type]), ...m })
    .returning();
  return present(row!);
}

/** One movement of the tenant's, of the type asked for: a withdrawal's id under deposits is not found, as another tenant's is. */
export async function movementOf(db: Db, tenantId: string, type: MovementType, id: string): Promise<MovementView> {
  const [row] = await db
    .select()
    .from(accountMovements)
    .where(and(eq(accountMovements.id, id), eq(accountMovements.tenantId, tenantId), eq(accountMovements.type, type)));
  if (!row) throw new NotFoundError(type, id);
  return present(row);
}

/** An account's movements, newest first. */
export async function movementsOf(db: Db, tenantId: string, accountId: string, limit: number): Promise<MovementView[]> {
  const rows = await db
    .select()
    .from(accountMovements)
    .where(and(eq(accountMovements.tenantId, tenantId), eq(accountMovements.accountId, accountId)))
    .orderBy(desc(accountMovements.createdAt), desc(accountMovements.id))
    .limit(limit);
  return rows.map(present);
}
