/**
 * `admin.keys.get`: one key with everything about it: every stored field,
 * the canonical request its fingerprint was computed from, the stored
 * response, its timeline (the key's events, the completer's attempts and
 * the operators' actions from the audit log, in time order), and what it
 * caused: the ledger entries tagged with it and the payments (with the
 * provider's charge id) created under it, each with where it stands
 * (payments/standing.ts): a payment still pending is looked up at the
 * provider by the key's downstream key, read-only.
 */
import type { Sql } from "postgres";
import { NotFoundError } from "../errors";
import { formatMinor } from "../money";
import type { PspClient } from "../psp/client";
import { isOpen, standingOf, type PaymentStanding } from "../payments/standing";
import { downstreamKeyOf, generation, iso } from "./key-state";
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
  /** Why the completer's last attempt did not finish the key; when it tries next; when it gave up. */
  completerError: string | null;
  completerNextAt: string | null;
  completerGaveUpAt: string | null;
};
/** One line of the timeline: `source` tells the key's own events from an operator's action (`operator`, with its detail). */
export type TimelineEvent = {
  id: string;
  source: "key" | "operator";
  type: string;
  fence: number | null;
  status: number | null;
  recoveryPoint: string | null;
  /** For "waited": how long the duplicate waited for the key. */
  waitedMs: number | null;
  /** For "replayed": how many replays this line stands for (replays are counted per key and written every 5 seconds). */
  count: number | null;
  /** The recorded OpenTelemetry trace of the request (or completer run) the event happened in. */
  traceId: string | null;
  detail: Record<string, unknown> | null;
  at: string;
};
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
export type CausedPayment = {
  id: string;
  status: string;
  amount: string;
  currency: string;
  destination: string;
  pspChargeId: string | null;
  createdAt: string;
  standing: PaymentStanding;
};

type RawDetail = RawSummary & {
  request: string;
  response_body: string | null;
  recovery_data: string | null;
  updated_at: string;
  completed_at: string | null;
  completer_error: string | null;
  completer_next_at: string | null;
  completer_gave_up_at: string | null;
  generation: string;
  trace_id: string | null;
};
type RawEvent = Omit<TimelineEvent, "id" | "source" | "detail"> & { id: number };
type RawAudit = { id: number; action: string; detail: string; at: string };

export async function getKey(ctx: { sql: Sql; psp: PspClient }, input: KeyRefInput) {
  const q = ctx.sql;
  const { tenantId, key } = input;
  const [[row], events, audit, ledger, payments] = await Promise.all([
    q<RawDetail[]>`
      select ${summaryColumns(q, "k")}, k.request, k.response_body, k.recovery_data::text as recovery_data,
             ${iso(q, q`k.updated_at`)} as updated_at, ${iso(q, q`k.completed_at`)} as completed_at,
             k.completer_error, ${iso(q, q`k.completer_next_at`)} as completer_next_at, ${iso(q, q`k.completer_gave_up_at`)} as completer_gave_up_at,
             ${generation(q, "k")} as generation, k.trace_id
      from idempotency_keys k left join tenants t on t.id = k.tenant_id
      where k.tenant_id = ${tenantId} and k.key = ${key}`,
    q<RawEvent[]>`
      select e.id::float8 as id, e.type, e.fence::float8 as fence, e.status, e.recovery_point as "recoveryPoint", e.waited_ms as "waitedMs", e.count, e.trace_id as "traceId", ${iso(q, q`e.at`)} as at
      from idempotency_events e where e.tenant_id = ${tenantId} and e.key = ${key}
      order by e.at, e.id limit ${TIMELINE_LIMIT}`,
    q<RawAudit[]>`
      select a.id::float8 as id, a.action, a.detail::text as detail, ${iso(q, q`a.at`)} as at
      from admin_audit_log a where a.tenant_id = ${tenantId} and a.key = ${key}
      order by a.at, a.id limit ${TIMELINE_LIMIT}`,
    q<(Omit<CausedLedgerEntry, "amount"> & { amountMinor: number })[]>`
      select l.id, l.transaction_id as "transactionId", l.ledger_account as "ledgerAccount", l.direction,
             l.amount_minor::float8 as "amountMinor", l.currency, l.payment_id as "paymentId", l.account_id as "accountId",
             l.order_id as "orderId", ${iso(q, q`l.created_at`)} as "createdAt"
      from ledger_entries l where l.tenant_id = ${tenantId} and l.idempotency_key = ${key}
      order by l.created_at, l.transaction_id, l.direction desc, l.id`,
    q<(Omit<CausedPayment, "amount" | "standing"> & { amountMinor: number })[]>`
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
    completerError: row.completer_error,
    completerNextAt: row.completer_next_at,
    completerGaveUpAt: row.completer_gave_up_at,
  };
  const none = { fence: null, status: null, recoveryPoint: null, waitedMs: null, count: null, traceId: null, detail: null };
  // Claimed and completed are on the key row itself, the claim with the trace of the request that took the key
  // (the event writer keeps only what the row cannot tell).
  const timeline: TimelineEvent[] = [
    { ...none, id: "row-claimed", source: "key", type: "claimed", traceId: row.trace_id, at: detail.createdAt },
  ];
  if (detail.completedAt) {
    const type = detail.completedBy === "completer" ? "completed_by_completer" : "completed";
    timeline.push({
      ...none,
      id: "row-completed",
      source: "key",
      type,
      fence: detail.fence,
      status: detail.responseStatus,
      at: detail.completedAt,
    });
  }
  for (const e of events) timeline.push({ ...e, id: `event-${e.id}`, source: "key", detail: null });
  for (const a of audit)
    timeline.push({
      ...none,
      id: `audit-${a.id}`,
      source: "operator",
      type: a.action,
      detail: JSON.parse(a.detail) as Record<string, unknown>,
      at: a.at,
    });
  // Only an open payment needs the provider, and one lookup answers for the key's charge.
  const provider = payments.some(isOpen) ? await ctx.psp.lookupKey(downstreamKeyOf({ tenantId, key }, row.generation)) : undefined;
  return {
    key: detail,
    // Times are ISO with microseconds in UTC: as text they sort in time order. Equal times keep the order above.
    timeline: timeline
      .map((e, i) => [e, i] as const)
      .sort(([a, i], [b, j]) => (a.at < b.at ? -1 : a.at > b.at ? 1 : i - j))
      .map(([e]) => e),
    ledger: ledger.map(({ amountMinor, ...entry }): CausedLedgerEntry => ({ ...entry, amount: formatMinor(amountMinor) })),
    payments: payments.map(({ amountMinor, ...payment }): CausedPayment => ({
      ...payment,
      amount: formatMinor(amountMinor),
      standing: standingOf(payment, provider),
    })),
  };
}
