/**
 * `admin.keys.get`: one key with everything about it: every stored field,
 * the canonical request its fingerprint was computed from, the stored
 * response, its timeline from `idempotency_events`, and what it caused: the
 * ledger entries tagged with it and the payments (with the provider's charge
 * id) created under it.
 */
import type { Sql } from "postgres";
import { NotFoundError } from "../errors";
import { formatMinor } from "../money";
import { iso } from "./key-state";
import type { KeyRefInput } from "./key-ref.schema";
import { summaryColumns, toSummary, type KeySummary, type RawSummary } from "./list.handler";

/** A key's history is short; this only bounds a pathological one (a key replayed all day). */
const TIMELINE_LIMIT = 500;

export type KeyDetail = KeySummary & {
  request: string;
  responseBody: string | null;
  recoveryData: string | null;
  updatedAt: string;
  completedAt: string | null;
};
export type TimelineEvent = { id: number; type: string; fence: number | null; status: number | null; recoveryPoint: string | null; at: string };
export type CausedLedgerEntry = {
  id: string;
  transactionId: string;
  ledgerAccount: string;
  direction: "debit" | "credit";
  amount: string;
  currency: string;
  paymentId: string | null;
  accountId: string | null;
  orderId: string | null;
  createdAt: string;
};
export type CausedPayment = { id: string; status: string; amount: string; currency: string; destination: string; pspChargeId: string | null; createdAt: string };

type RawDetail = RawSummary & { request: string; response_body: string | null; recovery_data: string | null; updated_at: string; completed_at: string | null };

export async function getKey(ctx: { sql: Sql }, input: KeyRefInput) {
  const q = ctx.sql;
  const { tenantId, key } = input;
  const [[row], timeline, ledger, payments] = await Promise.all([
    q<RawDetail[]>`
      select ${summaryColumns(q, "k")}, k.request, k.response_body, k.recovery_data::text as recovery_data,
             ${iso(q, q`k.updated_at`)} as updated_at, ${iso(q, q`k.completed_at`)} as completed_at
      from idempotency_keys k left join tenants t on t.id = k.tenant_id
      where k.tenant_id = ${tenantId} and k.key = ${key}`,
    q<TimelineEvent[]>`
      select e.id::float8 as id, e.type, e.fence::float8 as fence, e.status, e.recovery_point as "recoveryPoint", ${iso(q, q`e.at`)} as at
      from idempotency_events e where e.tenant_id = ${tenantId} and e.key = ${key}
      order by e.at, e.id limit ${TIMELINE_LIMIT}`,
    q<(Omit<CausedLedgerEntry, "amount"> & { amountMinor: number })[]>`
      select l.id, l.transaction_id as "transactionId", l.ledger_account as "ledgerAccount", l.direction,
             l.amount_minor::float8 as "amountMinor", l.currency, l.payment_id as "paymentId", l.account_id as "accountId",
             l.order_id as "orderId", ${iso(q, q`l.created_at`)} as "createdAt"
      from ledger_entries l where l.tenant_id = ${tenantId} and l.idempotency_key = ${key}
      order by l.created_at, l.transaction_id, l.direction desc, l.id`,
    q<(Omit<CausedPayment, "amount"> & { amountMinor: number })[]>`
      select p.id, p.status, p.amount_minor::float8 as "amountMinor", p.currency, p.destination, p.psp_charge_id as "pspChargeId",
             ${iso(q, q`p.created_at`)} as "createdAt"
      from payments p where p.tenant_id = ${tenantId} and p.idempotency_key = ${key}
      order by p.created_at, p.id`,
  ]);
  if (!row) throw new NotFoundError("idempotency key", key);
  const detail: KeyDetail = {
    ...toSummary(row),
    request: row.request,
    responseBody: row.response_body,
    recoveryData: row.recovery_data,
    updatedAt: row.updated_at,
    completedAt: row.completed_at,
  };
  // Claimed and completed are on the key row itself (the event writer keeps only what the row cannot tell).
  const fromRow: TimelineEvent[] = [{ id: -2, type: "claimed", fence: null, status: null, recoveryPoint: null, at: detail.createdAt }];
  if (detail.completedAt) fromRow.push({ id: -1, type: "completed", fence: detail.fence, status: detail.responseStatus, recoveryPoint: null, at: detail.completedAt });
  return {
    key: detail,
    timeline: [...fromRow, ...timeline].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.id - b.id)),
    ledger: ledger.map(({ amountMinor, ...entry }): CausedLedgerEntry => ({ ...entry, amount: formatMinor(amountMinor) })),
    payments: payments.map(({ amountMinor, ...payment }): CausedPayment => ({ ...payment, amount: formatMinor(amountMinor) })),
  };
}
