/**
 * The provider attempts behind each charge: a flaky provider's failed first
 * call is invisible in the payment itself (the retry with the same
 * downstream key succeeds), so the checkout's confirmation reads it from
 * here. Stored per payment in the database, so whichever instance made the
 * calls, any instance shows them.
 */
import { asc, eq } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client";
import { chargeAttempts } from "../../db/schema";
import { logger } from "../logger";
import type { ObservedCall } from "../psp/client";

export const chargeAttemptSchema = z.object({
  status: z.number().int().nullable(),
  error: z.string().nullable(),
  replayed: z.boolean(),
  ms: z.number().int(),
});
export type ChargeAttempt = z.infer<typeof chargeAttemptSchema>;

/** Charges carry their payment id as `reference`; anything else is not a charge attempt. */
export async function noteChargeAttempt(db: Db, call: ObservedCall): Promise<void> {
  const reference =
    call.method === "POST" && call.path === "/charges" ? (call.body as { reference?: unknown } | undefined)?.reference : undefined;
  if (typeof reference !== "string") return;
  try {
    await db.insert(chargeAttempts).values({
      paymentId: reference,
      status: call.status ?? null,
      error: call.error ?? null,
      replayed: call.replayed,
      elapsedMs: Math.round(call.elapsedMs),
    });
  } catch (error) {
    // An explanation for the page, not a record the money depends on: losing one must not fail the charge.
    logger.warn({ err: error, paymentId: reference }, "a charge attempt could not be recorded");
  }
}

/** In the order they were made. */
export async function chargeAttemptsOf(db: Db, paymentId: string): Promise<ChargeAttempt[]> {
  const rows = await db.select().from(chargeAttempts).where(eq(chargeAttempts.paymentId, paymentId)).orderBy(asc(chargeAttempts.id));
  return rows.map((r) => ({ status: r.status, error: r.error, replayed: r.replayed, ms: r.elapsedMs }));
}
