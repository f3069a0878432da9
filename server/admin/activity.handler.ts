/**
 * `admin.keys.activity`: what retries ran into over the last hour, per
 * minute: replays, conflicts (a duplicate while the first was running),
 * mismatches (same key, different request) and takeovers (a holder's lease
 * ran out). One grouped pass over the `(at, type)` index of
 * `idempotency_events`; minutes without events are filled in here.
 */
import type { Sql } from "postgres";
import { IdempotencyEventType as E } from "@exactly-once/trpc";

export const ACTIVITY_TYPES = [E.Replayed, E.Conflict, E.Mismatch, E.Takeover] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

export type ActivityMinute = { minute: string } & Record<ActivityType, number>;

const MINUTES = 60;

export async function keyActivity(ctx: { sql: Sql }, input: { tenantId?: string | undefined }): Promise<ActivityMinute[]> {
  const q = ctx.sql;
  const tenant = input.tenantId === undefined ? q`` : q`and e.tenant_id = ${input.tenantId}`;
  // One statement, so the window and the events agree on "now"; the left join yields a row even in a quiet hour.
  const rows = await q<{ first: number; ms: number | null; type: ActivityType | null; n: number | null }[]>`
    with w as (select date_trunc('minute', now()) - ${MINUTES - 1} * interval '1 minute' as first)
    select extract(epoch from w.first)::float8 * 1000 as first, extract(epoch from g.minute)::float8 * 1000 as ms, g.type, g.n
    from w left join lateral (
      -- date_bin and a plain sum keep the per-event work small: an hour can hold a few hundred thousand events.
      -- A replayed row stands for that key's replays in its minute (\`count\`); every other event is one.
      select date_bin('1 minute', e.at, w.first) as minute, e.type, sum(coalesce(e.count, 1))::int as n
      from idempotency_events e
      where e.at >= w.first and e.type in ${q([...ACTIVITY_TYPES])} ${tenant}
      group by 1, 2) g on true`;
  const start = rows[0]!.first;
  const minutes: ActivityMinute[] = Array.from({ length: MINUTES }, (_, i) => ({
    minute: new Date(start + i * 60_000).toISOString(),
    replayed: 0,
    conflict: 0,
    mismatch: 0,
    takeover: 0,
  }));
  const byMinute = new Map(minutes.map((m, i) => [start + i * 60_000, m]));
  for (const r of rows) {
    const bucket = r.ms === null ? undefined : byMinute.get(r.ms);
    if (bucket && r.type) bucket[r.type] = r.n ?? 0;
  }
  return minutes;
}
