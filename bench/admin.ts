/**
 * The admin dashboard at scale: 1,000,000 idempotency keys (and 200,000
 * events) in a fresh database, then the server time of the first page of
 * every filter, the counts and the activity chart, median and p95 of
 * repeated calls. The target is a p95 of at most 50 ms each. Part of
 * `npm run bench` (skip it with `-- --no-admin`); on its own:
 * `npx tsx bench/admin.ts`. `--live-keys` times the same cases on its own
 * fill (bench/live-keys.ts).
 */
import { pathToFileURL } from "node:url";
import postgres, { type Sql } from "postgres";
import { keyActivity } from "../server/admin/activity.handler";
import { keyCounts } from "../server/admin/counts.handler";
import { listKeys } from "../server/admin/list.handler";
import { listKeysInput, type ListKeysInput } from "../server/admin/list.schema";
import { createFreshDatabase } from "../tests/support/database";
import { median, percentile } from "./measure";

const KEYS = Number(process.env.BENCH_ADMIN_KEYS ?? 1_000_000);
export const ADMIN_TARGET_MS = 50;
/** Enough calls for a p95 that is not the slowest call: the 19th of 20. */
const RUNS = 20;

/** The dashboard's overview block (the counts beside the activity chart, fetched together) and its default list page. */
export const OVERVIEW = "overview (counts + activity)";
export const FIRST_PAGE = "first page (newest 50)";

export type AdminTiming = { name: string; median: number; p95: number };

/** A tenant holding some of the keys, and a key prefix some of them start with: the one-tenant and prefix cases. */
export type AdminSample = { tenantId: string; keyPrefix: string };

/**
 * 100 tenants; about 94 % completed, 6 % failed; 0.1 % in progress (keys of
 * recoverable calls still running, a tenth of them stale: atomic keys are
 * never seen in progress); 0.5 % expired but not yet swept.
 */
export async function seedKeys(sql: Sql, keys = KEYS): Promise<void> {
  await sql`
    insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, fence, locked_until,
                                  response_status, response_body, created_at, completed_at, expires_at, replay_count)
    select 'ten_bench_' || (g % 100),
           'key-' || lpad(to_hex(g), 8, '0'),
           (array['payments.create', 'orders.create', 'accounts.withdraw', 'payments.refund'])[1 + g % 4],
           md5(g::text) || md5((g * 7)::text),
           'payments.create' || chr(10) || '{"amount":' || g || '}',
           case when g % 1000 = 0 then 'in_progress' when g % 17 = 0 then 'failed' else 'completed' end,
           1,
           case when g % 1000 = 0 then (case when g % 10000 = 0 then now() - interval '5 minutes' else now() + interval '30 seconds' end) end,
           case when g % 1000 = 0 then null when g % 17 = 0 then 402 else 201 end,
           case when g % 1000 = 0 then null else '{"id":"pay_' || g || '"}' end,
           now() - (g % 172800) * interval '1 second',
           case when g % 1000 = 0 then null else now() - (g % 172800) * interval '1 second' end,
           -- Retention 24 h; the sweep runs every minute, so only keys that expired
           -- since the last sweep are still there: 0.5 % of them here.
           case when g % 200 = 0 then now() - interval '30 seconds' else now() + (g % 86400) * interval '1 second' end,
           g % 3
    from generate_series(1, ${keys}) g`;
  await sql`
    insert into idempotency_events (tenant_id, key, procedure, type, fence, at)
    select 'ten_bench_' || (g % 100), 'key-' || lpad(to_hex(g), 8, '0'), 'payments.create',
           (array['replayed', 'conflict', 'mismatch', 'takeover', 'claimed', 'completed'])[1 + g % 6], 1,
           now() - (g % 7200) * interval '1 second'
    from generate_series(1, ${Math.floor(keys / 5)}) g`;
  await sql`analyze idempotency_keys`;
  await sql`analyze idempotency_events`;
}

/** One unmeasured call (plans, caches), then RUNS measured ones. */
async function time(name: string, fn: () => Promise<unknown>): Promise<AdminTiming> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  const sorted = times.sort((a, b) => a - b);
  return { name, median: median(sorted), p95: percentile(sorted, 95) };
}

const list = (sql: Sql, input: Partial<ListKeysInput>) => () => listKeys({ sql }, listKeysInput.parse(input));

/** Every case timed on the keys already in the table, a line each as it is done. */
export async function timeAdmin(sql: Sql, sample: AdminSample, write: (line: string) => void): Promise<AdminTiming[]> {
  const first = await listKeys({ sql }, listKeysInput.parse({}));
  const { tenantId, keyPrefix } = sample;
  const cases: [string, () => Promise<unknown>][] = [
    [FIRST_PAGE, list(sql, {})],
    ["second page (cursor)", list(sql, { cursor: first.nextCursor ?? undefined })],
    ["oldest first", list(sql, { sort: "created_asc" })],
    ["state = completed", list(sql, { state: "completed" })],
    ["state = failed", list(sql, { state: "failed" })],
    ["state = in_progress", list(sql, { state: "in_progress" })],
    ["state = expired", list(sql, { state: "expired" })],
    ["stale only", list(sql, { staleOnly: true })],
    ["expired only", list(sql, { expiredOnly: true })],
    ["one tenant", list(sql, { tenantId })],
    ["one tenant, failed", list(sql, { tenantId, state: "failed" })],
    ["procedure", list(sql, { procedure: "orders.create" })],
    ["key prefix", list(sql, { keyPrefix })],
    ["key prefix, one tenant", list(sql, { keyPrefix, tenantId })],
    ["counts (global, estimated)", () => keyCounts({ sql }, {})],
    ["counts (one tenant, exact)", () => keyCounts({ sql }, { tenantId })],
    ["activity chart (last hour)", () => keyActivity({ sql }, {})],
    [OVERVIEW, () => Promise.all([keyCounts({ sql }, {}), keyActivity({ sql }, {})])],
  ];
  const results: AdminTiming[] = [];
  write(`${"query".padEnd(30)} ${"median ms".padStart(10)} ${"p95 ms".padStart(8)}  target p95 <= ${ADMIN_TARGET_MS} ms\n`);
  for (const [name, fn] of cases) {
    const t = await time(name, fn);
    results.push(t);
    write(
      `${name.padEnd(30)} ${t.median.toFixed(1).padStart(10)} ${t.p95.toFixed(1).padStart(8)}  ${t.p95 <= ADMIN_TARGET_MS ? "met" : "MISSED"}\n`,
    );
  }
  return results;
}

export async function runAdminBench(sql: Sql): Promise<AdminTiming[]> {
  const started = performance.now();
  await seedKeys(sql);
  process.stdout.write(
    `\nAdmin dashboard at scale: ${KEYS.toLocaleString("en")} keys seeded in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
  return timeAdmin(sql, { tenantId: "ten_bench_42", keyPrefix: "key-000a" }, (line) => process.stdout.write(line));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const db = await createFreshDatabase("bench_admin");
  const sql = postgres(db.url, { max: 4, onnotice: () => {} });
  try {
    await runAdminBench(sql);
  } finally {
    await sql.end();
    await db.dispose();
  }
}
