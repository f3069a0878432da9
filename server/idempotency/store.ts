/**
 * The SQL of the key lifecycle. Every state change is one conditional
 * statement that the database decides atomically: a claim is an
 * `INSERT ... ON CONFLICT DO NOTHING`, a takeover or completion an `UPDATE`
 * guarded by the fence the caller holds. Nothing here reads and then acts.
 *
 * These run on whatever connection they are given, so the middleware can put
 * several of them in one pipeline or one transaction.
 */
import type { Sql } from "postgres";
import { KeyState } from "./schema";

export type KeyRef = { tenantId: string; key: string };

export type ClaimInput = KeyRef & {
  procedure: string;
  fingerprint: string;
  request: string;
  ttlMs: number;
  leaseMs: number;
};

/** A key as the middleware needs to see it, with the clock comparisons done by PostgreSQL. */
export type KeyRow = {
  procedure: string;
  fingerprint: string;
  state: KeyState;
  fence: number;
  recoveryPoint: string;
  recoveryData: Record<string, unknown> | null;
  responseStatus: number | null;
  responseBody: string | null;
  /** The key's generation: a key replaced after expiry is a new operation. */
  createdAt: string;
  expired: boolean;
  leaseExpired: boolean;
  leaseMsLeft: number;
};

export type Claim = { fence: number; createdAt: string; recoveryPoint: string; recoveryData: Record<string, unknown> | null };

/**
 * Timestamps and JSON are selected as text: the pool is shared with Drizzle,
 * which installs pass-through parsers for those types.
 */
type RawClaim = { fence: string; created_at: string; recovery_point: string; recovery_data: string | null };

const json = (text: string | null) => (text === null ? null : (JSON.parse(text) as Record<string, unknown>));

const toClaim = (r: RawClaim): Claim => ({
  fence: Number(r.fence),
  createdAt: r.created_at,
  recoveryPoint: r.recovery_point,
  recoveryData: json(r.recovery_data),
});

export const claimed = (rows: RawClaim[]): Claim | undefined => (rows[0] ? toClaim(rows[0]) : undefined);

/**
 * The claim and, when it loses, the existing row, in one statement. One
 * caveat: the second half reads the statement's snapshot, taken before the
 * INSERT may have waited for a concurrent claimer; a row that claimer
 * committed meanwhile is not in it. No row back at all means exactly that:
 * look again with `load`.
 */
export type ClaimOrLoadRows = (RawRow & { claimed: boolean })[];

/**
 * Returns the query itself, unsent: postgres-js sends a query when it is
 * awaited, so the caller decides its place in a pipeline (after BEGIN).
 */
export function claimOrLoad(q: Sql, c: ClaimInput) {
  return q<ClaimOrLoadRows>`
    with ins as (
      insert into idempotency_keys
        (tenant_id, key, procedure, fingerprint, request, locked_until, expires_at)
      values
        (${c.tenantId}, ${c.key}, ${c.procedure}, ${c.fingerprint}, ${c.request},
         now() + ${c.leaseMs} * interval '1 millisecond', now() + ${c.ttlMs} * interval '1 millisecond')
      on conflict (tenant_id, key) do nothing
      returning fence, created_at, recovery_point, recovery_data)
    select true as claimed, fence, created_at::text as created_at, recovery_point, recovery_data::text as recovery_data,
           null as procedure, null as fingerprint, null as state, null::int as response_status, null as response_body,
           false as expired, false as lease_expired, 0::float8 as lease_ms_left
    from ins
    union all
    select false, fence, created_at::text, recovery_point, recovery_data::text,
           procedure, fingerprint, state, response_status, response_body,
           expires_at <= now(), coalesce(locked_until <= now(), true),
           greatest(0, coalesce(extract(epoch from locked_until - now()) * 1000, 0))::float8
    from idempotency_keys
    where tenant_id = ${c.tenantId} and key = ${c.key}`;
}

export function claimOutcome(rows: ClaimOrLoadRows): { claim: Claim } | { row: KeyRow } | undefined {
  const first = rows[0];
  if (!first) return undefined;
  return first.claimed ? { claim: toClaim(first) } : { row: loaded([first])! };
}

type RawRow = {
  procedure: string;
  fingerprint: string;
  state: KeyState;
  fence: string;
  recovery_point: string;
  recovery_data: string | null;
  response_status: number | null;
  response_body: string | null;
  created_at: string;
  expired: boolean;
  lease_expired: boolean;
  lease_ms_left: number;
};

export function load(q: Sql, k: KeyRef) {
  return q<RawRow[]>`
    select procedure, fingerprint, state, fence, recovery_point, recovery_data::text as recovery_data,
           response_status, response_body, created_at::text as created_at,
           expires_at <= now() as expired,
           coalesce(locked_until <= now(), true) as lease_expired,
           greatest(0, coalesce(extract(epoch from locked_until - now()) * 1000, 0))::float8 as lease_ms_left
    from idempotency_keys
    where tenant_id = ${k.tenantId} and key = ${k.key}`;
}

export const loaded = (rows: RawRow[]): KeyRow | undefined => {
  const r = rows[0];
  if (!r) return undefined;
  return {
    procedure: r.procedure,
    fingerprint: r.fingerprint,
    state: r.state,
    fence: Number(r.fence),
    recoveryPoint: r.recovery_point,
    recoveryData: json(r.recovery_data),
    responseStatus: r.response_status,
    responseBody: r.response_body,
    createdAt: r.created_at,
    expired: r.expired,
    leaseExpired: r.lease_expired,
    leaseMsLeft: r.lease_ms_left,
  };
};

/** An expired key is a new operation: the row is reset in place, with a new generation. */
export async function replaceExpired(q: Sql, c: ClaimInput): Promise<Claim | undefined> {
  const rows = await q<RawClaim[]>`
    update idempotency_keys set
      procedure = ${c.procedure}, fingerprint = ${c.fingerprint}, request = ${c.request},
      state = ${KeyState.InProgress}, fence = fence + 1,
      locked_until = now() + ${c.leaseMs} * interval '1 millisecond',
      recovery_point = 'started', recovery_data = null,
      response_status = null, response_body = null,
      created_at = now(), updated_at = now(), completed_at = null,
      expires_at = now() + ${c.ttlMs} * interval '1 millisecond',
      replay_count = 0, last_replayed_at = null
    where tenant_id = ${c.tenantId} and key = ${c.key} and expires_at <= now()
    returning fence, created_at::text as created_at, recovery_point, recovery_data::text as recovery_data`;
  return claimed(rows);
}

/** Takes over an in-progress key whose holder crashed, stalled or let go (its lease ran out). */
export async function takeOver(q: Sql, k: KeyRef, seenFence: number, leaseMs: number): Promise<Claim | undefined> {
  const rows = await q<RawClaim[]>`
    update idempotency_keys set
      fence = fence + 1, updated_at = now(),
      locked_until = now() + ${leaseMs} * interval '1 millisecond'
    where tenant_id = ${k.tenantId} and key = ${k.key}
      and state = ${KeyState.InProgress} and fence = ${seenFence}
      and (locked_until is null or locked_until <= now())
    returning fence, created_at::text as created_at, recovery_point, recovery_data::text as recovery_data`;
  return claimed(rows);
}

/** Extends the lease while the holder still owns the key; no row means it lost it. */
export function renew(q: Sql, k: KeyRef, fence: number, leaseMs: number) {
  return q`
    update idempotency_keys set locked_until = now() + ${leaseMs} * interval '1 millisecond'
    where tenant_id = ${k.tenantId} and key = ${k.key}
      and state = ${KeyState.InProgress} and fence = ${fence}
    returning 1`;
}

/** Locks the key row for the rest of a transaction, if this holder still owns it. */
export function lockOwned(q: Sql, k: KeyRef, fence: number) {
  return q`
    select 1 from idempotency_keys
    where tenant_id = ${k.tenantId} and key = ${k.key}
      and state = ${KeyState.InProgress} and fence = ${fence}
    for update`;
}

export function savePoint(q: Sql, k: KeyRef, fence: number, point: string, data: Record<string, unknown>, leaseMs: number) {
  return q`
    update idempotency_keys set
      recovery_point = ${point}, recovery_data = ${JSON.stringify(data)}::jsonb,
      locked_until = now() + ${leaseMs} * interval '1 millisecond', updated_at = now()
    where tenant_id = ${k.tenantId} and key = ${k.key}
      and state = ${KeyState.InProgress} and fence = ${fence}
    returning 1`;
}

export type Outcome = { state: typeof KeyState.Completed | typeof KeyState.Failed; status: number; body: string };

export function complete(q: Sql, k: KeyRef, fence: number, o: Outcome) {
  return q`
    update idempotency_keys set
      state = ${o.state}, response_status = ${o.status}, response_body = ${o.body},
      locked_until = null, completed_at = now(), updated_at = now()
    where tenant_id = ${k.tenantId} and key = ${k.key}
      and state = ${KeyState.InProgress} and fence = ${fence}
    returning 1`;
}

/** Gives the key up after an unexpected error: the fingerprint and recovery point stay, the lease ends now. */
export function release(q: Sql, k: KeyRef, fence: number) {
  return q`
    update idempotency_keys set locked_until = now(), updated_at = now()
    where tenant_id = ${k.tenantId} and key = ${k.key}
      and state = ${KeyState.InProgress} and fence = ${fence}
    returning 1`;
}

export function countReplay(q: Sql, k: KeyRef) {
  return q`
    update idempotency_keys set replay_count = replay_count + 1, last_replayed_at = now()
    where tenant_id = ${k.tenantId} and key = ${k.key}`;
}

/**
 * Deletes up to `limit` expired keys, chosen through the `expires_at` index
 * and deleted by `ctid` in one short statement. Rows another transaction holds
 * are skipped, never waited for, so writers are not stalled.
 */
export async function deleteExpiredBatch(q: Sql, limit: number): Promise<number> {
  const result = await q`
    delete from idempotency_keys
    where ctid = any(array(
      select ctid from idempotency_keys
      where expires_at <= now()
      order by expires_at
      limit ${limit}
      for update skip locked))`;
  return result.count;
}
