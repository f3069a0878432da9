/**
 * `admin.keys.list`: one keyset page of idempotency keys, newest (or oldest)
 * first, over any combination of filters.
 *
 * The order is (created_at, key) and the indexes are
 * (state, created_at, key) and (tenant_id, state, created_at, key). Every
 * query is therefore split into one branch per stored state: each branch has
 * the state as an equality, walks its index in order from the cursor and
 * stops after a page; the union of at most three short branches is sorted
 * again. Without the split the planner has no index in (created_at, key)
 * order and sorts the whole table (hundreds of ms at a million rows).
 *
 * Expired keys are the exception: the sweep keeps them few, so they are
 * found through the `expires_at` index and sorted. Walking a state index in
 * order and filtering on expiry instead reads past every live key (100+ ms
 * at a million rows), and the planner, which cannot know how few expired
 * keys there are, tends to pick just that; an `offset 0` fence stops it.
 */
import type { Fragment, Sql } from "postgres";
import { KeyState } from "@exactly-once/trpc";
import { DisplayState, isExpired, isStale, iso, msBetween, needsAttention, STORED_STATES, type DisplayState as State } from "./key-state";
import { decodeCursor, encodeCursor, KeySort, type ListKeysInput } from "./list.schema";

export type KeySummary = {
  tenantId: string;
  tenantName: string | null;
  key: string;
  procedure: string;
  state: State;
  storedState: KeyState;
  stale: boolean;
  /** How long the lease has been over, for stale keys. */
  staleForMs: number | null;
  fingerprint: string;
  responseStatus: number | null;
  fence: number;
  recoveryPoint: string;
  createdAt: string;
  expiresAt: string;
  /** Negative once expired. */
  expiresInMs: number;
  lockedUntil: string | null;
  replayCount: number;
  lastReplayedAt: string | null;
  /** How often the completer took the key up; who stored the result (`completer`, or null: the client). */
  completerAttempts: number;
  completedBy: string | null;
};

export type KeyPage = { items: KeySummary[]; nextCursor: string | null };

export type RawSummary = {
  tenant_id: string;
  tenant_name: string | null;
  key: string;
  procedure: string;
  state: KeyState;
  fingerprint: string;
  response_status: number | null;
  fence: number;
  recovery_point: string;
  created_at: string;
  expires_at: string;
  expires_in_ms: number;
  locked_until: string | null;
  replay_count: number;
  last_replayed_at: string | null;
  expired: boolean;
  stale: boolean;
  stale_for_ms: number | null;
  needs_attention: boolean;
  completer_attempts: number;
  completed_by: string | null;
};

/** The list row of the key aliased `alias`, with its tenant's name from a `tenants` aliased `t`. */
export const summaryColumns = (q: Sql, alias: string): Fragment => {
  const k = q(alias);
  return q`${k}.tenant_id, t.name as tenant_name, ${k}.key, ${k}.procedure, ${k}.state, ${k}.fingerprint, ${k}.response_status,
           ${k}.fence::float8 as fence, ${k}.recovery_point, ${k}.replay_count,
           ${iso(q, q`${k}.created_at`)} as created_at, ${iso(q, q`${k}.expires_at`)} as expires_at,
           ${iso(q, q`${k}.locked_until`)} as locked_until, ${iso(q, q`${k}.last_replayed_at`)} as last_replayed_at,
           ${msBetween(q, q`now()`, q`${k}.expires_at`)} as expires_in_ms,
           ${isExpired(q, alias)} as expired, ${isStale(q, alias)} as stale, ${needsAttention(q, alias)} as needs_attention,
           ${k}.completer_attempts, ${k}.completed_by,
           case when ${isStale(q, alias)} then ${msBetween(q, q`coalesce(${k}.locked_until, ${k}.created_at)`, q`now()`)} end as stale_for_ms`;
};

/** `%`, `_` and the escape itself match literally in a LIKE pattern only when escaped. */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The stored states that can hold a row matching the filters; empty when the filters contradict each other. */
function branchStates(input: ListKeysInput): KeyState[] {
  const { state, staleOnly, expiredOnly } = input;
  const inProgress = state === DisplayState.InProgress || state === DisplayState.NeedsAttention;
  if (staleOnly) {
    const compatible = !expiredOnly && (state === undefined || inProgress);
    return compatible ? [KeyState.InProgress] : [];
  }
  // A key that needs attention has not expired (it would show as expired).
  if (state === DisplayState.NeedsAttention) return expiredOnly ? [] : [KeyState.InProgress];
  if (state === undefined || state === DisplayState.Expired) return [...STORED_STATES];
  return [state];
}

const wantsExpired = (input: ListKeysInput) => !input.staleOnly && (input.expiredOnly || input.state === DisplayState.Expired);

/** Conditions every branch shares, beyond its state. */
function conditions(q: Sql, input: ListKeysInput): Fragment[] {
  const where: Fragment[] = [];
  if (input.tenantId !== undefined) where.push(q`k.tenant_id = ${input.tenantId}`);
  if (input.procedure !== undefined) where.push(q`k.procedure = ${input.procedure}`);
  if (input.keyPrefix !== undefined) where.push(q`k.key like ${likePrefix(input.keyPrefix)}`);
  if (input.state === DisplayState.NeedsAttention) where.push(needsAttention(q, "k"));
  if (input.staleOnly) where.push(isStale(q, "k"));
  else if (wantsExpired(input)) where.push(isExpired(q, "k"));
  // A stored state as a display state: the key must not have expired, or it shows as "expired".
  else if (input.state !== undefined) where.push(q`not ${isExpired(q, "k")}`);
  if (input.cursor !== undefined) {
    const c = decodeCursor(input.cursor);
    const after = input.sort === KeySort.CreatedAsc ? q`>` : q`<`;
    where.push(q`(k.created_at, k.key) ${after} (${c.createdAt}::timestamptz, ${c.key})`);
  }
  return where;
}

/** What a list row shows: never the stored request or response, which can be large. */
const COLUMN_NAMES = [
  "tenant_id",
  "key",
  "procedure",
  "state",
  "fingerprint",
  "response_status",
  "fence",
  "recovery_point",
  "replay_count",
  "created_at",
  "expires_at",
  "locked_until",
  "last_replayed_at",
  "completer_attempts",
  "completer_gave_up_at",
  "completed_by",
];

const and = (q: Sql, parts: Fragment[]) => parts.reduce((all, part) => q`${all} and ${part}`);

export async function listKeys(ctx: { sql: Sql }, input: ListKeysInput): Promise<KeyPage> {
  const q = ctx.sql;
  const states = branchStates(input);
  if (states.length === 0) return { items: [], nextCursor: null };
  const shared = conditions(q, input);
  const take = input.limit + 1;
  const order = (alias: string) =>
    input.sort === KeySort.CreatedAsc
      ? q`${q(alias)}.created_at asc, ${q(alias)}.key asc`
      : q`${q(alias)}.created_at desc, ${q(alias)}.key desc`;
  const stored =
    input.state !== undefined && input.state !== DisplayState.Expired && input.state !== DisplayState.NeedsAttention
      ? [q`k.state = ${input.state}`]
      : [];
  const candidates = wantsExpired(input)
    ? q`select * from (select ${q(COLUMN_NAMES)} from idempotency_keys k where ${and(q, [...stored, ...shared])} offset 0) expired`
    : states
        .map(
          (state) =>
            q`(select ${q(COLUMN_NAMES)} from idempotency_keys k where ${and(q, [q`k.state = ${state}`, ...shared])} order by ${order("k")} limit ${take})`,
        )
        .reduce((all, branch) => q`${all} union all ${branch}`);
  const rows = await q<RawSummary[]>`
    select ${summaryColumns(q, "u")}
    from (${candidates}) u
    left join tenants t on t.id = u.tenant_id
    order by ${order("u")}
    limit ${take}`;
  const page = rows.slice(0, input.limit).map(toSummary);
  const last = page.at(-1);
  const nextCursor = rows.length > input.limit && last ? encodeCursor({ createdAt: last.createdAt, key: last.key }) : null;
  return { items: page, nextCursor };
}

export function toSummary(r: RawSummary): KeySummary {
  return {
    tenantId: r.tenant_id,
    tenantName: r.tenant_name,
    key: r.key,
    procedure: r.procedure,
    state: r.expired ? DisplayState.Expired : r.needs_attention ? DisplayState.NeedsAttention : r.state,
    storedState: r.state,
    stale: r.stale,
    staleForMs: r.stale_for_ms,
    fingerprint: r.fingerprint,
    responseStatus: r.response_status,
    fence: r.fence,
    recoveryPoint: r.recovery_point,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    expiresInMs: r.expires_in_ms,
    lockedUntil: r.locked_until,
    replayCount: r.replay_count,
    lastReplayedAt: r.last_replayed_at,
    completerAttempts: r.completer_attempts,
    completedBy: r.completed_by,
  };
}
