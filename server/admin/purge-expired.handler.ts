/**
 * `admin.keys.purgeExpired`: deletes expired keys now rather than at the
 * next sweep, with the sweep's own paced batches (across all tenants, or
 * limited to one). A purge stops after PURGE_BUDGET_MS and says whether
 * expired keys remain, so a request never runs unbounded; the audit entry
 * records how many rows went.
 */
import type { Sql } from "postgres";
import { AdminAction } from "../../db/schema/admin";
import { hasExpiredKeys } from "@exactly-once/trpc";
import type { EventLog } from "../keys/events";
import { deleteExpiredKeys } from "../keys/runtime";
import { recordAudit } from "./audit";
import type { TenantScopeInput } from "./key-ref.schema";
import type { AdminSession } from "./session";

const PURGE_BUDGET_MS = 10_000;

export type Purged = { deleted: number; remaining: boolean };

export async function purgeExpired(ctx: { sql: Sql; events: EventLog; admin: AdminSession }, input: TenantScopeInput): Promise<Purged> {
  const deleted = await deleteExpiredKeys(ctx, { signal: AbortSignal.timeout(PURGE_BUDGET_MS), tenantId: input.tenantId });
  const purged: Purged = { deleted, remaining: await hasExpiredKeys(ctx.sql, input.tenantId) };
  await recordAudit(ctx.sql, {
    action: AdminAction.PurgeExpired,
    by: ctx.admin,
    tenantId: input.tenantId ?? null,
    detail: { ...purged, scope: input.tenantId ?? "all tenants" },
  });
  return purged;
}
