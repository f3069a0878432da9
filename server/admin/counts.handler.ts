/**
 * `admin.keys.counts`: how many keys are in each state.
 *
 * For one tenant the counts are exact (one pass over the tenant's index
 * range). Across all tenants an exact `count(*) ... group by state` costs a
 * scan of the whole table (~175 ms at two million rows), so large states are
 * estimated from PostgreSQL's statistics: the table's row count (reltuples
 * scaled to its current size, as the planner does) times each value's
 * frequency in `pg_stats.most_common_freqs`. States the statistics call small
 * are counted exactly, up to a cap, through the state index; so are the
 * derived "expired", "stale" and "needs attention", which statistics cannot
 * see. Like "stale", "needs attention" is a part of "in progress", counted
 * on its own.
 */
import type { Fragment, Sql } from "postgres";
import { KeyState } from "@exactly-once/trpc";
import { DisplayState, isExpired, isStale, needsAttention, STORED_STATES } from "./key-state";

/** Below this many rows an exact count is cheap; above it a bounded count stops and says "at least". */
export const EXACT_LIMIT = 10_000;

export type CountKind = "exact" | "estimate" | "at_least";
export type Count = { value: number; kind: CountKind };
export type KeyCounts = Record<DisplayState | "stale", Count>;

const exact = (value: number): Count => ({ value, kind: "exact" });

async function tenantCounts(q: Sql, tenantId: string): Promise<KeyCounts> {
  const rows = await q<{ state: KeyState; expired: boolean; n: number; stale: number; attention: number }[]>`
    select state, ${isExpired(q, "k")} as expired, count(*)::int as n, count(*) filter (where ${isStale(q, "k")})::int as stale,
           count(*) filter (where ${needsAttention(q, "k")})::int as attention
    from idempotency_keys k where k.tenant_id = ${tenantId}
    group by 1, 2`;
  const counts: KeyCounts = {
    in_progress: exact(0),
    completed: exact(0),
    failed: exact(0),
    expired: exact(0),
    stale: exact(0),
    needs_attention: exact(0),
  };
  for (const r of rows) {
    const state = r.expired ? DisplayState.Expired : r.state;
    counts[state] = exact(counts[state].value + r.n);
    counts.stale = exact(counts.stale.value + r.stale);
    counts.needs_attention = exact(counts.needs_attention.value + r.attention);
  }
  return counts;
}

type Statistics = { rows: number; frequencies: Map<string, number> | undefined };

async function statistics(q: Sql): Promise<Statistics> {
  const [row] = await q<{ rows: number | null; values: string[] | null; freqs: number[] | null }[]>`
    select case
             when c.reltuples < 0 then null
             when c.relpages = 0 then c.reltuples::float8
             else c.reltuples::float8 / c.relpages * (pg_relation_size(c.oid) / current_setting('block_size')::int)
           end as rows,
           s.most_common_vals::text::text[] as values,
           s.most_common_freqs::float8[] as freqs
    from pg_class c
    left join pg_stats s on s.schemaname = c.relnamespace::regnamespace::text and s.tablename = c.relname and s.attname = 'state'
    where c.oid = 'idempotency_keys'::regclass`;
  if (!row || row.rows === null) return { rows: -1, frequencies: undefined };
  const frequencies = row.values && row.freqs ? new Map(row.values.map((v, i) => [v, row.freqs![i] ?? 0])) : undefined;
  return { rows: row.rows, frequencies };
}

/** Counts up to EXACT_LIMIT rows matching `where`, through whichever index the condition allows. */
async function bounded(q: Sql, where: Fragment): Promise<Count> {
  const [row] = await q<
    { n: number }[]
  >`select count(*)::int as n from (select 1 from idempotency_keys k where ${where} limit ${EXACT_LIMIT + 1}) b`;
  const n = row?.n ?? 0;
  return n > EXACT_LIMIT ? { value: EXACT_LIMIT, kind: "at_least" } : exact(n);
}

async function globalCounts(q: Sql): Promise<KeyCounts> {
  const stats = await statistics(q);
  const [expired, stale, attention] = await Promise.all([
    bounded(q, isExpired(q, "k")),
    bounded(q, isStale(q, "k")),
    bounded(q, needsAttention(q, "k")),
  ]);
  if (stats.rows < EXACT_LIMIT || !stats.frequencies) {
    // A small table, or one never analysed: the exact grouping is the only honest answer.
    const [row] = await q<Record<KeyState, number>[]>`
      select count(*) filter (where state = ${KeyState.InProgress})::int as in_progress,
             count(*) filter (where state = ${KeyState.Completed})::int as completed,
             count(*) filter (where state = ${KeyState.Failed})::int as failed
      from idempotency_keys k where not ${isExpired(q, "k")}`;
    return {
      in_progress: exact(row?.in_progress ?? 0),
      completed: exact(row?.completed ?? 0),
      failed: exact(row?.failed ?? 0),
      expired,
      stale,
      needs_attention: attention,
    };
  }
  const perState = await Promise.all(
    STORED_STATES.map(async (state): Promise<Count> => {
      const estimate = Math.round(stats.rows * (stats.frequencies!.get(state) ?? 0));
      if (estimate >= EXACT_LIMIT) return { value: estimate, kind: "estimate" };
      const counted = await bounded(q, q`k.state = ${state} and not ${isExpired(q, "k")}`);
      return counted.kind === "at_least" ? { value: Math.max(estimate, EXACT_LIMIT), kind: "estimate" } : counted;
    }),
  );
  const [inProgress, completed, failed] = perState as [Count, Count, Count];
  return { in_progress: inProgress, completed, failed, expired, stale, needs_attention: attention };
}

export function keyCounts(ctx: { sql: Sql }, input: { tenantId?: string | undefined }): Promise<KeyCounts> {
  return input.tenantId === undefined ? globalCounts(ctx.sql) : tenantCounts(ctx.sql, input.tenantId);
}
