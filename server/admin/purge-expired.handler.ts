/**
 * `admin.keys.purgeExpired`: deletes expired keys now rather than at the
 * next sweep. Across all tenants it runs the sweep's own paced batches; for
 * one tenant, batches limited to that tenant. Either way a purge stops after
 * PURGE_BUDGET_MS and says whether expired keys remain, so a request never
 * runs unbounded; the audit entry records how many rows went.
 */
import type { Sql } from "postgres";
import { AdminAction } from "../../db/schema/admin";
import { IdempotencyEventType } from "../idempotency/events";
import { recordEvent } from "../keys/events";
import { deleteExpiredKeys } from "../trpc";
import { recordAudit } from "./audit";
import type { TenantScopeInput } from "./key-ref.schema";
import type { AdminSession } from "./session";

const BATCH = 5000;
const PURGE_BUDGET_MS = 10_000;

export type Purged = { deleted: number; remaining: boolean };

/** Like the sweep's batch (ctid, skip locked, through the expires_at index), limited to one tenant. */
async function purgeTenant(q: Sql, tenantId: string, signal: AbortSignal): Promise<number> {
  let total = 0;
  while (!signal.aborted) {
    const { count } = await q`
      delete from idempotency_keys
      where ctid = any(array(
        select ctid from idempotency_keys
        where tenant_id = ${tenantId} and expires_at <= now()
        order by expires_at
        limit ${BATCH}
        for update skip locked))`;
    total += count;
    if (count > 0) recordEvent({ type: IdempotencyEventType.Expired, tenantId, key: "*", procedure: "*", count });
    if (count < BATCH) break;
  }
  return total;
}

export async function purgeExpired(ctx: { sql: Sql; admin: AdminSession }, input: TenantScopeInput): Promise<Purged> {
  const q = ctx.sql;
  const signal = AbortSignal.timeout(PURGE_BUDGET_MS);
  const deleted = input.tenantId === undefined ? await deleteExpiredKeys({ signal }) : await purgeTenant(q, input.tenantId, signal);
  const tenant = input.tenantId === undefined ? q`` : q`and tenant_id = ${input.tenantId}`;
  const [left] = await q<{ remaining: boolean }[]>`select exists (select 1 from idempotency_keys where expires_at <= now() ${tenant}) as remaining`;
  const purged: Purged = { deleted, remaining: left?.remaining ?? false };
  await recordAudit(q, { action: AdminAction.PurgeExpired, sessionId: ctx.admin.id, tenantId: input.tenantId ?? null, detail: { ...purged, scope: input.tenantId ?? "all tenants" } });
  return purged;
}
