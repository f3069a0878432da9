/** Reads shared by the payment procedures: always scoped to the tenant, another tenant's id is a 404. */
import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { payments } from "../../db/schema";
import { NotFoundError } from "../errors";

export async function paymentOf(db: Db, tenantId: string, id: string) {
  const [payment] = await db
    .select()
    .from(payments)
    .where(and(eq(payments.id, id), eq(payments.tenantId, tenantId)));
  if (!payment) throw new NotFoundError("payment", id);
  return payment;
}
