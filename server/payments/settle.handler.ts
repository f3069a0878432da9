/**
 * `payments.capture` and `payments.void`: first reserve the change on the
 * payment row with one conditional UPDATE (so capture and void cannot both
 * proceed), then ask the provider with the key's downstream key, then record
 * the outcome: three phases a retry resumes from.
 */
import { and, eq, isNull, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { payments, PaymentStatus } from "../../db/schema";
import { RuleViolationError } from "../errors";
import type { RecoverableHandle } from "@exactly-once/trpc";
import { Book, transfer, type Ledger } from "../ledger/post";
import { presentPayment } from "./present";
import type { PspClient } from "../psp/client";
import { paymentOf } from "./queries";
import { providerFailed } from "./refusal";

/** Why the reservation touched no row, as a business refusal (never 409). */
async function refuseAction(db: Db, tenantId: string, id: string, action: SettleAction): Promise<never> {
  const p = await paymentOf(db, tenantId, id);
  const detail = { paymentId: id, paymentStatus: p.status };
  if (p.status === PaymentStatus.Canceled || p.pendingAction === "void") {
    throw new RuleViolationError(
      "payment-canceled",
      action === "capture" ? "This payment was voided; it cannot be captured." : "This payment is already voided.",
      detail,
    );
  }
  if (p.status === PaymentStatus.Succeeded || p.pendingAction === "capture") {
    throw new RuleViolationError(
      "payment-captured",
      action === "void" ? "This payment was captured; it cannot be voided." : "This payment is already captured.",
      detail,
    );
  }
  throw new RuleViolationError(
    "payment-not-authorized",
    `Only an authorized payment (requires_capture) can be ${action === "capture" ? "captured" : "voided"}; this one is ${p.status}.`,
    detail,
  );
}

export const SettleAction = { Capture: "capture", Void: "void" } as const;
export type SettleAction = (typeof SettleAction)[keyof typeof SettleAction];

export async function settleAuthorization(
  ctx: { db: Db; psp: PspClient; ledger: Ledger; tenant: { id: string }; idempotency: RecoverableHandle<Db> },
  input: { id: string },
  action: SettleAction,
) {
  const h = ctx.idempotency;
  const tenantId = ctx.tenant.id;
  const { chargeId } = await h.phase("reserved", async (tx) => {
    const [reserved] = await tx
      .update(payments)
      .set({ pendingAction: action, updatedAt: new Date() })
      .where(
        and(
          eq(payments.id, input.id),
          eq(payments.tenantId, tenantId),
          eq(payments.status, PaymentStatus.RequiresCapture),
          isNull(payments.pendingAction),
        ),
      )
      .returning();
    if (!reserved) return refuseAction(tx, tenantId, input.id, action);
    return { chargeId: reserved.pspChargeId! };
  });
  const result = action === "capture" ? await ctx.psp.capture(chargeId, h.downstreamKey) : await ctx.psp.void(chargeId, h.downstreamKey);
  if (result.kind !== "ok") {
    return providerFailed(result, async () => {
      await h.phase("released", async (tx) => {
        await tx
          .update(payments)
          .set({ pendingAction: null, updatedAt: new Date() })
          .where(and(eq(payments.id, input.id), eq(payments.pendingAction, action)));
        return null;
      });
    });
  }
  await h.phase("settled", async (tx) => {
    const [p] = await tx
      .update(payments)
      .set(
        action === "capture"
          ? {
              status: PaymentStatus.Succeeded,
              amountCapturedMinor: sql`${payments.amountMinor}`,
              pendingAction: null,
              updatedAt: new Date(),
            }
          : { status: PaymentStatus.Canceled, pendingAction: null, updatedAt: new Date() },
      )
      .where(eq(payments.id, input.id))
      .returning();
    if (action === "capture") {
      await ctx.ledger.post(tx, {
        tenantId,
        currency: p!.currency,
        cause: { idempotencyKey: h.key },
        links: { paymentId: p!.id },
        lines: transfer(Book.pspClearing, Book.sales, p!.amountMinor),
      });
    }
    return null;
  });
  return presentPayment(await paymentOf(ctx.db, tenantId, input.id));
}
