/**
 * The SQL of the key lifecycle. Every state change is one conditional
 * statement that the database decides: the write that takes a key is an
 * upsert guarded by the fence the writer saw (under the key's advisory lock),
 * and every later write of a holder is an UPDATE guarded by its own fence.
 * Nothing here reads and then acts.
 *
 * These run on whatever connection they are given, so a flavour can put
 * several of them in one pipeline or one transaction. A statement returned
 * unawaited is sent when awaited: the caller decides its place in a pipeline.
 */
import type { ISql, Sql } from "postgres";
import { expired, generationOf, isExpired, isLeaseOver, leaseOver, msLeft } from "./rules.js";
import { KeyState } from "./states.js";
import { identifier, sqlText, statement, type SqlText } from "./statement.js";

export type KeyRef = { tenantId: string; key: string };

/**
 * What an attempt would store about its request. `traceId`: the recorded
 * trace the request runs in (W3C trace context), or null.
 */
export type Request = KeyRef & { procedure: string; fingerprint: string; request: string; ttlMs: number; traceId: string | null };

/** What a key's row must show to be decided on (`decide`) and, when it is stored, replayed. */
export type Decidable = {
  procedure: string;
  fingerprint: string;
  state: KeyState;
  fence: number;
  responseStatus: number | null;
  responseBody: string | null;
  expired: boolean;
  leaseOver: boolean;
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
  generation: string;
  expired: boolean;
  leaseOver: boolean;
  leaseMsLeft: number;
};

/** What a holder gets when it takes a key: the fence it writes under and where the work stands. */
export type Claim = { fence: number; generation: string; recoveryPoint: string; recoveryData: Record<string, unknown> | null };

/**
 * Timestamps and JSON are selected as text: the pool is shared with Drizzle,
 * which installs pass-through parsers for those types.
 */
type RawClaim = { fence: string; generation: string; recovery_point: string; recovery_data: string | null };
type RawRow = RawClaim & {
  procedure: string;
  fingerprint: string;
  state: KeyState;
  response_status: number | null;
  response_body: string | null;
  expired: boolean;
  lease_over: boolean;
  lease_ms_left: number;
};

const json = (text: string | null) => (text === null ? null : (JSON.parse(text) as Record<string, unknown>));

const toClaim = (r: RawClaim): Claim => ({
  fence: Number(r.fence),
  generation: r.generation,
  recoveryPoint: r.recovery_point,
  recoveryData: json(r.recovery_data),
});

export const claimed = (rows: RawClaim[]): Claim | undefined => (rows[0] ? toClaim(rows[0]) : undefined);

/** The key row's columns as `KeyRow` reads them (`loaded`), from the row aliased `k`. */
const keyColumns = sqlText`k.procedure, k.fingerprint, k.state, k.fence, k.recovery_point, k.recovery_data::text as recovery_data,
    k.response_status, k.response_body, ${generationOf("k")} as generation,
    ${expired("k")} as expired, ${leaseOver("k")} as lease_over, ${msLeft("k")} as lease_ms_left`;

/** The key's row aliased `k`, by its primary key. */
const byKey = statement<KeyRef>`k.tenant_id = ${(k) => k.tenantId} and k.key = ${(k) => k.key}`;

const LOAD = statement<KeyRef>`select ${keyColumns} from idempotency_keys k where ${byKey}`;

export const load = (q: ISql, k: KeyRef) => LOAD.on<RawRow[]>(q, k);

/**
 * One statement that opens a key's transaction after BEGIN: the key's
 * advisory lock (tried, never waited for) and the key row. The row is read
 * under the statement's snapshot, taken before the lock: a holder that
 * committed in between is missed here, but never
 * overwritten, because every take is guarded (a fresh INSERT by the primary
 * key, a retake by the fence it saw) and fails on such a row (`rowChanged`),
 * and the acquisition then looks again. Always one row: `locked`, and the
 * key's columns (null when it has no row).
 */
const TAKE = statement<KeyRef & { lockId: string }>`
    select pg_try_advisory_xact_lock(${(k) => k.lockId}::int8) as locked, r.*
    from (select 1) one left join lateral (
      select ${keyColumns} from idempotency_keys k where ${byKey}) r on true`;

export const take = (q: ISql, k: KeyRef, lockId: string) =>
  TAKE.on<(RawRow & { locked: boolean })[]>(q, { tenantId: k.tenantId, key: k.key, lockId });

type RawPeek = Pick<
  RawRow,
  "procedure" | "fingerprint" | "state" | "fence" | "response_status" | "response_body" | "expired" | "lease_over"
>;

/**
 * The key row as a flavour first looks at it, before any transaction (the
 * atomic flavour) or pipelined with its claim (the recoverable one): the
 * columns `decide` and a replay need and no others (the generation, the
 * lease's remaining time and the recovery point are computed or parsed only
 * on the locking path, which needs them). On a
 * fresh key it is one probe of the primary key that finds nothing.
 */
const PEEK = statement<KeyRef>`select k.procedure, k.fingerprint, k.state, k.fence, k.response_status, k.response_body,
    ${expired("k")} as expired, ${leaseOver("k")} as lease_over
    from idempotency_keys k where ${byKey}`;

export const peek = (q: ISql, k: KeyRef) => PEEK.on<RawPeek[]>(q, k);

export const peeked = (rows: RawPeek[]): Decidable | undefined => {
  const r = rows[0];
  if (!r) return undefined;
  return {
    procedure: r.procedure,
    fingerprint: r.fingerprint,
    state: r.state,
    fence: Number(r.fence),
    responseStatus: r.response_status,
    responseBody: r.response_body,
    expired: r.expired,
    leaseOver: r.lease_over,
  };
};

export const loaded = (rows: RawRow[]): KeyRow | undefined => {
  const r = rows[0];
  // A row of `take` for a key without a row has its columns null.
  if (!r?.state) return undefined;
  return {
    ...toClaim(r),
    procedure: r.procedure,
    fingerprint: r.fingerprint,
    state: r.state,
    responseStatus: r.response_status,
    responseBody: r.response_body,
    expired: r.expired,
    leaseOver: r.lease_over,
    leaseMsLeft: r.lease_ms_left,
  };
};

/** What a take writes: a claim (in progress, leased) or an atomic outcome (completed, failed, or released). */
export type Put = { state: KeyState; leaseMs: number | null; status: number | null; body: string | null };

/** A write of a key row: the request it stores, what it puts there, and the fence its writer saw (0: no row). */
type Write = { r: Request; p: Put; seenFence: number };
/** A parameter of a write: a field of its request (`r`) or of what it puts (`p`). */
const r =
  <K extends keyof Request>(name: K) =>
  (w: Write) =>
    w.r[name];
const p =
  <K extends keyof Put>(name: K) =>
  (w: Write) =>
    w.p[name];

/** The INSERT of a new key row as `p` describes it. */
const INSERT_ROW = statement<Write>`
    insert into idempotency_keys as k
      (tenant_id, key, procedure, fingerprint, request, state, locked_until, response_status, response_body, completed_at, expires_at, trace_id)
    values
      (${r("tenantId")}, ${r("key")}, ${r("procedure")}, ${r("fingerprint")}, ${r("request")}, ${p("state")},
       now() + ${p("leaseMs")}::float8 * interval '1 millisecond', ${p("status")}, ${p("body")},
       case when ${p("state")}::text <> ${() => KeyState.InProgress} then now() end,
       now() + ${r("ttlMs")}::float8 * interval '1 millisecond', ${r("traceId")})`;

const returningClaim = sqlText`returning k.fence, ${generationOf("k")} as generation, k.recovery_point, k.recovery_data::text as recovery_data`;

/**
 * Takes a key that has no row: a plain INSERT, fence 1. Only a writer holding
 * the key's advisory lock inserts, but it may have read the key before a
 * previous holder's commit became visible (`take`): then the unique
 * violation aborts the transaction (and the COMMIT pipelined after it), so
 * nothing commits without its key row, and the acquisition looks again.
 */
const INSERT = statement<Write>`${INSERT_ROW}
    ${returningClaim}`;

/**
 * Takes a key whose row the caller saw with `seenFence`: an expired row is
 * reset in place (a new operation, a new generation), an in-progress row
 * nobody holds is taken over (fence + 1; the generation, the recovery
 * point and the trace of the request that first took it kept). The expiry
 * sweep may delete an expired row meanwhile: then it is inserted. A row
 * that changed otherwise is left alone and nothing comes back, or in
 * `RETAKE_OR_FAIL` the statement fails (1 / 0), so that a COMMIT pipelined
 * after it cannot commit business writes without their key row.
 */
const fresh = expired("k");
const RETAKE = statement<Write>`
    with taken as (
    ${INSERT_ROW}
    on conflict (tenant_id, key) do update set
      procedure = excluded.procedure, fingerprint = excluded.fingerprint, request = excluded.request,
      state = excluded.state, fence = k.fence + 1, locked_until = excluded.locked_until,
      response_status = excluded.response_status, response_body = excluded.response_body, completed_at = excluded.completed_at,
      recovery_point = case when ${fresh} then 'started' else k.recovery_point end,
      recovery_data = case when ${fresh} then null else k.recovery_data end,
      created_at = case when ${fresh} then now() else k.created_at end,
      expires_at = case when ${fresh} then excluded.expires_at else k.expires_at end,
      replay_count = case when ${fresh} then 0 else k.replay_count end,
      last_replayed_at = case when ${fresh} then null else k.last_replayed_at end,
      completer_attempts = case when ${fresh} then 0 else k.completer_attempts end, completer_next_at = case when ${fresh} then null else k.completer_next_at end,
      completer_error = case when ${fresh} then null else k.completer_error end, completer_gave_up_at = case when ${fresh} then null else k.completer_gave_up_at end,
      completed_by = case when ${fresh} then null else k.completed_by end,
      trace_id = case when ${fresh} then excluded.trace_id else k.trace_id end,
      updated_at = now()
    where k.fence = ${(w) => w.seenFence} and (${fresh} or (k.state = ${() => KeyState.InProgress} and ${leaseOver("k")}))
    ${returningClaim})
    select * from taken`;

const RETAKE_OR_FAIL = statement<Write>`${RETAKE}
    union all select null::bigint, null::text, null::text, null::text where ${noneFails("taken")}`;

/**
 * A condition that is never true and fails the statement (22012, a division
 * by zero: `rowChanged`) when the CTE `name` wrote no row, so that a COMMIT
 * pipelined behind it ends the transaction instead of committing it.
 */
function noneFails(name: string): SqlText {
  return sqlText`1 / (select count(*)::int from ${identifier(name)}) = 0`;
}

/**
 * The take failed because the row is not what the taker saw: a row appeared
 * under a fresh INSERT (unique_violation), or `RETAKE_OR_FAIL`'s guard
 * found it changed (its division by zero). The transaction is aborted; the
 * acquisition looks again and decides on the row as it is now.
 */
export function rowChanged(error: unknown): boolean {
  const e = error as { code?: string; table_name?: string } | undefined;
  return (e?.code === "23505" && e.table_name === "idempotency_keys") || e?.code === "22012";
}

/**
 * The key row of an attempt that ran without the key's lock, written only if
 * the key still has no row (in a statement of its own, after its work was
 * rolled back): true when it was written, false when another attempt's row
 * is there.
 */
const INSERT_IF_ABSENT = statement<Write>`${INSERT_ROW}
    on conflict (tenant_id, key) do nothing
    returning 1`;

export async function insertIfAbsent(q: ISql, r: Request, p: Put): Promise<boolean> {
  const rows = await INSERT_IF_ABSENT.on(q, { r, p, seenFence: 0 });
  return rows.length > 0;
}

/**
 * Claims a key that has no row, in one statement of its own and without the
 * key's lock: the primary key lets one attempt in. Nothing comes back when a
 * row is there (the acquisition then decides on it).
 */
const CLAIM_IF_ABSENT = statement<Write>`${INSERT_ROW}
    on conflict (tenant_id, key) do nothing
    ${returningClaim}`;

export const claimIfAbsent = (q: ISql, r: Request, p: Put) => CLAIM_IF_ABSENT.on<RawClaim[]>(q, { r, p, seenFence: 0 });

/** Takes the key in one statement, whatever the acquisition found (no row: 0), guarded by the fence it saw. */
export const put = (q: ISql, r: Request, seenFence: number, p: Put) =>
  (seenFence === 0 ? INSERT : RETAKE).on<RawClaim[]>(q, { r, p, seenFence });

/**
 * The atomic flavour's final row, pipelined with COMMIT: it must either be
 * written or fail the statement, and nothing is read back. A first attempt
 * (the common case) is then the bare INSERT, without the claim's RETURNING
 * and its computed generation, which PostgreSQL would build and send for
 * nobody; a takeover keeps the retake with its guard.
 */
export const settle = (q: ISql, r: Request, seenFence: number, p: Put) =>
  (seenFence === 0 ? INSERT_ROW : RETAKE_OR_FAIL).on(q, { r, p, seenFence });

/** Extends the lease while the holder still owns the key; no row means it lost it. */
export function renew(q: ISql, k: KeyRef, fence: number, leaseMs: number) {
  return q`
    update idempotency_keys set locked_until = now() + ${leaseMs} * interval '1 millisecond'
    where tenant_id = ${k.tenantId} and key = ${k.key} and state = ${KeyState.InProgress} and fence = ${fence}
    returning 1`;
}

/** Locks the key row for the rest of a transaction, if this holder still owns it. */
export function lockOwned(q: ISql, k: KeyRef, fence: number) {
  return q`
    select 1 from idempotency_keys
    where tenant_id = ${k.tenantId} and key = ${k.key} and state = ${KeyState.InProgress} and fence = ${fence}
    for update`;
}

export function savePoint(q: ISql, k: KeyRef, fence: number, point: string, data: Record<string, unknown>, leaseMs: number) {
  return q`
    update idempotency_keys set
      recovery_point = ${point}, recovery_data = ${JSON.stringify(data)}::text::jsonb,
      locked_until = now() + ${leaseMs} * interval '1 millisecond', updated_at = now()
    where tenant_id = ${k.tenantId} and key = ${k.key} and state = ${KeyState.InProgress} and fence = ${fence}
    returning 1`;
}

export type FinalResponse = { state: typeof KeyState.Completed | typeof KeyState.Failed; status: number; body: string };

/**
 * Stores the outcome if the holder of `fence` still owns the key; nothing
 * comes back when it lost it. A `finish` (given its `point`) also records
 * its phase as the recovery point and has the statement fail then (the same
 * `noneFails` guard as `RETAKE_OR_FAIL`), so that the business writes of
 * the COMMIT pipelined behind it go nowhere.
 */
type Completion = { k: KeyRef; fence: number; o: FinalResponse; point?: string };

/** The completion's assignments after any recovery point, its guard (the holder's fence) and its RETURNING. */
const completed = statement<Completion>`
      state = ${(c) => c.o.state}, response_status = ${(c) => c.o.status}, response_body = ${(c) => c.o.body},
      locked_until = null, completed_at = now(), updated_at = now()
    where tenant_id = ${(c) => c.k.tenantId} and key = ${(c) => c.k.key} and state = ${() => KeyState.InProgress} and fence = ${(c) => c.fence}
    returning 1`;

const COMPLETE = statement<Completion>`update idempotency_keys set ${completed}`;

const FINISH = statement<Completion>`
    with done as (update idempotency_keys set recovery_point = ${(c) => c.point ?? null}, ${completed})
    select 1 from done union all select 1 where ${noneFails("done")}`;

export function complete(q: ISql, k: KeyRef, fence: number, o: FinalResponse, finish?: { point: string }) {
  return finish ? FINISH.on(q, { k, fence, o, point: finish.point }) : COMPLETE.on(q, { k, fence, o });
}

/** Gives the key up after an unexpected error: the fingerprint and recovery point stay, the lease ends now. */
export function release(q: ISql, k: KeyRef, fence: number) {
  return q`
    update idempotency_keys set locked_until = now(), updated_at = now()
    where tenant_id = ${k.tenantId} and key = ${k.key} and state = ${KeyState.InProgress} and fence = ${fence}
    returning 1`;
}

/**
 * An operator ends the lease of an in-progress key now, whoever holds it (no
 * fence: the next attempt's takeover bumps it, and the old holder can then
 * write nothing). Returns the key as it was; only an in-progress, unexpired key
 * changes. NOWAIT: a phase holding the row should be reported, not waited on.
 */
export function releaseByOperator(q: ISql, k: KeyRef) {
  return q<{ state: KeyState; fence: number; previous_locked_until: string | null; expired: boolean; lease_over: boolean }[]>`
    with current as (
      select tenant_id, key, state, fence, locked_until, ${isExpired(q, "c")} as expired, ${isLeaseOver(q, "c")} as lease_over
      from idempotency_keys c where tenant_id = ${k.tenantId} and key = ${k.key}
      for update nowait),
    released as (
      update idempotency_keys k set locked_until = now(), updated_at = now()
      from current c
      where k.tenant_id = c.tenant_id and k.key = c.key and c.state = ${KeyState.InProgress} and not c.expired
      returning 1)
    select state, fence::float8 as fence,
           to_char(locked_until at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as previous_locked_until,
           expired, lease_over
    from current, (select count(*) from released) r`;
}

/**
 * Deletes up to `limit` expired keys (of one tenant, or of all), chosen
 * through the `expires_at` index and deleted by `ctid` in one short statement.
 * Rows another transaction holds are skipped, never waited for, so writers
 * are not stalled.
 */
export async function deleteExpiredBatch(q: Sql, limit: number, tenantId?: string): Promise<number> {
  const tenant = tenantId === undefined ? q`` : q`and k.tenant_id = ${tenantId}`;
  const result = await q`
    delete from idempotency_keys
    where ctid = any(array(
      select ctid from idempotency_keys k
      where ${isExpired(q, "k")} ${tenant}
      order by expires_at
      limit ${limit}
      for update skip locked))`;
  return result.count;
}

export async function hasExpired(q: Sql, tenantId?: string): Promise<boolean> {
  const tenant = tenantId === undefined ? q`` : q`and k.tenant_id = ${tenantId}`;
  const [row] = await q<{ any: boolean }[]>`select exists (select 1 from idempotency_keys k where ${isExpired(q, "k")} ${tenant}) as any`;
  return row?.any ?? false;
}
