/** `payments.create`: the pending payment row in a phase of its own, then the charge through the provider (charge.ts), which answers. */
import type { z } from "zod";
import type { Db } from "../../db/client";
import { payments, PaymentStatus } from "../../db/schema";
import type { RecoverableHandle } from "@exactly-once/trpc";
import { newId } from "../ids";
import { chargeAndRecord } from "./charge";
import type { Ledger } from "../ledger/post";
import type { PspClient } from "../psp/client";
import type { createPaymentInput } from "./create.schema";
import { presentPayment } from "./present";
import { paymentOf } from "./queries";

export async function createPayment(
  ctx: { db: Db; psp: PspClient; ledger: Ledger; tenant: { id: string }; idempotency: RecoverableHandle<Db> },
  input: z.infer<typeof createPaymentInput>,
) {
  const h = ctx.idempotency;
  const { paymentId } = await h.phase("created", async (tx) => {
    const id = newId("pay");
    await tx.insert(payments).values({
      id,
      tenantId: ctx.tenant.id,
      status: PaymentStatus.Pending,
      amountMinor: input.amount,
      currency: input.currency,
      destination: input.destination,
      capture: input.capture ? "automatic" : "manual",
      idempotencyKey: h.key,
    });
    return { paymentId: id };
  });
  return chargeAndRecord(
    ctx,
    h,
    {
      tenantId: ctx.tenant.id,
      paymentId,
      amountMinor: input.amount,
      currency: input.currency,
      destination: input.destination,
      capture: input.capture,
    },
    async (tx) => presentPayment(await paymentOf(tx, ctx.tenant.id, paymentId)),
  );
}
