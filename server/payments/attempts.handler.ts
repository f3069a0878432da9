/** `payments.attempts`: the provider calls behind one of the tenant's payments, in order. */
import type { Db } from "../../db/client";
import { chargeAttemptsOf } from "./charge-attempts";
import { paymentOf } from "./queries";

export async function listChargeAttempts(ctx: { db: Db; tenant: { id: string } }, input: { id: string }) {
  await paymentOf(ctx.db, ctx.tenant.id, input.id);
  return { data: await chargeAttemptsOf(ctx.db, input.id) };
}
