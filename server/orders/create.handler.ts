/**
 * `orders.create`, and the storefront's `checkout.pay` on its own base: place
 * the order, then charge it, as one recoverable operation.
 */
import type { z } from "zod";
import type { Db } from "../../db/client";
import type { RecoverableHandle } from "@exactly-once/trpc";
import { chargeAndRecord } from "../payments/charge";
import type { Ledger } from "../ledger/post";
import type { PspClient } from "../psp/client";
import type { cartSchema } from "./create.schema";
import { orderView } from "./order";
import { placeOrder } from "./place";

export async function createOrder(
  ctx: { db: Db; psp: PspClient; ledger: Ledger; tenant: { id: string }; idempotency: RecoverableHandle<Db> },
  input: z.infer<typeof cartSchema>,
) {
  const h = ctx.idempotency;
  const tenantId = ctx.tenant.id;
  const placed = await h.phase("placed", (tx) => placeOrder(tx, tenantId, h.key, input, input.destination));
  if (!placed.paymentId) return orderView(ctx.db, tenantId, placed.orderId);
  return chargeAndRecord(
    ctx,
    h,
    {
      tenantId,
      paymentId: placed.paymentId,
      orderId: placed.orderId,
      amountMinor: placed.totalMinor,
      currency: placed.currency,
      destination: input.destination,
      capture: true,
    },
    (tx) => orderView(tx, tenantId, placed.orderId),
  );
}
