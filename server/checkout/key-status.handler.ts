/** `checkout.keyStatus`: what the server saw of the page's key, so the page can show it (null before the first claim). */
import { and, eq } from "drizzle-orm";
import type { z } from "zod";
import type { Db } from "../../db/client";
import { idempotencyKeys } from "@exactly-once/trpc/drizzle";
import type { keyStatusInput } from "./key-status.schema";

export async function keyStatus(ctx: { db: Db; tenant: { id: string } }, input: z.infer<typeof keyStatusInput>) {
  const [row] = await ctx.db
    .select({
      state: idempotencyKeys.state,
      fence: idempotencyKeys.fence,
      recoveryPoint: idempotencyKeys.recoveryPoint,
      responseStatus: idempotencyKeys.responseStatus,
      replayCount: idempotencyKeys.replayCount,
      fingerprint: idempotencyKeys.fingerprint,
    })
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.tenantId, ctx.tenant.id), eq(idempotencyKeys.key, input.key)));
  return row ?? null;
}
