/**
 * `admin.keys.recover`: ends the lease of an in-progress key now, so the
 * next retry takes it over at once instead of waiting out the lease. Safe
 * even if the holder is alive: a takeover bumps the fence, and a holder whose
 * fence is stale can neither write its next phase nor complete the key.
 *
 * The change and its audit entry commit together.
 */
import type { Sql } from "postgres";
import { AdminAction } from "../../db/schema/admin";
import { DomainError, NotFoundError } from "../errors";
import { KeyState } from "../idempotency/schema";
import type { AdminSession } from "./session";
import { recordAudit } from "./audit";
import { iso } from "./key-state";
import type { KeyRefInput } from "./key-ref.schema";

const LOCK_NOT_AVAILABLE = "55P03";

export type Recovered = { fence: number; previousLockedUntil: string | null; wasStale: boolean };

type Current = { state: KeyState; fence: number; locked_until: string | null; expired: boolean; lease_over: boolean };

export async function recoverKey(ctx: { sql: Sql; admin: AdminSession }, input: KeyRefInput): Promise<Recovered> {
  const { tenantId, key } = input;
  try {
    return await ctx.sql.begin(async (q) => {
      // NOWAIT: an atomic holder keeps the row locked while it works; an operator should hear so, not hang.
      const [row] = await q<Current[]>`
        select state, fence::float8 as fence, ${iso(q, q`locked_until`)} as locked_until,
               expires_at <= now() as expired, coalesce(locked_until <= now(), true) as lease_over
        from idempotency_keys where tenant_id = ${tenantId} and key = ${key}
        for update nowait`;
      if (!row) throw new NotFoundError("idempotency key", key);
      if (row.state !== KeyState.InProgress || row.expired) {
        const what = row.expired ? "expired" : row.state.replace("_", " ");
        throw new DomainError("key-not-recoverable", 422, `Only an in-progress key can be recovered; this one is ${what}.`, { tenantId, key });
      }
      await q`
        update idempotency_keys set locked_until = now(), updated_at = now()
        where tenant_id = ${tenantId} and key = ${key} and fence = ${row.fence}`;
      const recovered: Recovered = { fence: row.fence, previousLockedUntil: row.locked_until, wasStale: row.lease_over };
      await recordAudit(q, { action: AdminAction.Recover, sessionId: ctx.admin.id, tenantId, key, detail: recovered });
      return recovered;
    });
  } catch (error) {
    if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) {
      throw new DomainError("key-busy", 409, "A request is working on this key right now; try again in a moment.", { tenantId, key }, { cause: error });
    }
    throw error;
  }
}
