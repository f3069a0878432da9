/**
 * The admin audit log: every recover, resume and purge, naming the operator
 * and the session that did it, written in the same
 * transaction as the change it records (or right after a purge's batches),
 * and listed on the dashboard and on each key's page.
 */
import type { ISql, Sql } from "postgres";
import { z } from "zod";
import { strictInput } from "../input";
import type { AdminAction } from "../../db/schema/admin";
import { iso } from "./key-state";
import type { AdminSession } from "./session";

export type AuditEntry = {
  id: number;
  action: AdminAction;
  sessionId: string;
  /** Who did it; null on entries from before operator accounts. */
  operator: string | null;
  tenantId: string | null;
  key: string | null;
  detail: Record<string, unknown>;
  at: string;
};

export type NewAuditEntry = {
  action: AdminAction;
  by: AdminSession;
  tenantId?: string | null;
  key?: string | null;
  detail: Record<string, unknown>;
};

export async function recordAudit(q: ISql, entry: NewAuditEntry): Promise<void> {
  await q`
    insert into admin_audit_log (action, session_id, operator, tenant_id, key, detail)
    values (${entry.action}, ${entry.by.id}, ${entry.by.operator.name}, ${entry.tenantId ?? null}, ${entry.key ?? null}, ${JSON.stringify(entry.detail)}::jsonb)`;
}

export const listAuditInput = strictInput({
  tenantId: z.string().min(1).max(100).optional(),
  /** With `tenantId`: the entries about that one key. */
  key: z.string().min(1).max(255).optional(),
  limit: z.number().int().min(1).max(100).default(20),
});
export type ListAuditInput = z.infer<typeof listAuditInput>;

export async function listAudit(ctx: { sql: Sql }, input: ListAuditInput): Promise<AuditEntry[]> {
  const q = ctx.sql;
  const filters = [
    input.tenantId === undefined ? q`` : q`and a.tenant_id = ${input.tenantId}`,
    input.key === undefined ? q`` : q`and a.key = ${input.key}`,
  ];
  // JSON comes back as text: the pool is shared with Drizzle, whose parsers pass JSON through untouched.
  const rows = await q<(Omit<AuditEntry, "detail"> & { detail: string })[]>`
    select a.id::float8 as id, a.action, a.session_id as "sessionId", a.operator, a.tenant_id as "tenantId", a.key,
           a.detail::text as detail, ${iso(q, q`a.at`)} as at
    from admin_audit_log a
    where true ${filters[0]!} ${filters[1]!}
    order by a.at desc, a.id desc
    limit ${input.limit}`;
  return rows.map((r) => ({ ...r, detail: JSON.parse(r.detail) as Record<string, unknown> }));
}
