/** `payments.list`: the tenant's payments, newest first. */
import { desc, eq } from "drizzle-orm";
import type { z } from "zod";
import type { Db } from "../../db/client";
import { payments } from "../../db/schema";
import type { listPaymentsInput } from "./list.schema";
import { presentPayment } from "./present";

export async function listPayments(ctx: { db: Db; tenant: { id: string } }, input: z.infer<typeof listPaymentsInput>) {
  const rows = await ctx.db
    .select()
    .from(payments)
    .where(eq(payments.tenantId, ctx.tenant.id))
    .orderBy(desc(payments.createdAt), desc(payments.id))
    .limit(input.limit);
  return { data: rows.map(presentPayment) };
}
