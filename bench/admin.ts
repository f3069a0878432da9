/**
 * The admin dashboard at scale: 1,000,000 idempotency keys (and 200,000
 * events) in a fresh database, then the server time of the first page of
 * every filter, the counts and the activity chart, median of repeated calls.
 * The target is < 50 ms each. Part of `npm run bench` (skip it with
 * `-- --no-admin`); on its own: `npx tsx bench/admin.ts`.
 */
import { pathToFileURL } from "node:url";
import postgres, { type Sql } from "postgres";
import { keyActivity } from "../server/admin/activity.handler";
import { keyCounts } from "../server/admin/counts.handler";
import { listKeys } from "../server/admin/list.handler";
import { listKeysInput, type ListKeysInput } from "../server/admin/list.schema";
import { createFreshDatabase } from "../tests/support/database";

const KEYS = Number(process.env.BENCH_ADMIN_KEYS ?? 1_000_000);
const TARGET_MS = 50;
const RUNS = 7;

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

async function median(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

const list = (sql: Sql, input: Partial<ListKeysInput>) => () => listKeys({ sql }, listKeysInput.parse(input));

export async function runAdminBench(sql: Sql): Promise<{ name: string; ms: number }[]> {
  const started = performance.now();
  await seedKeys(sql);
  process.stdout.write(
    `\nAdmin dashboard at scale: ${KEYS.toLocaleString("en")} keys seeded in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
  const first = await listKeys({ sql }, listKeysInput.parse({}));
  const cases: [string, () => Promise<unknown>][] = [
    ["first page (newest 50)", list(sql, {})],
    ["second page (cursor)", list(sql, { cursor: first.nextCursor ?? undefined })],
    ["oldest first", list(sql, { sort: "created_asc" })],
    ["state = completed", list(sql, { state: "completed" })],
    ["state = failed", list(sql, { state: "failed" })],
    ["state = in_progress", list(sql, { state: "in_progress" })],
    ["state = expired", list(sql, { state: "expired" })],
    ["stale only", list(sql, { staleOnly: true })],
    ["expired only", list(sql, { expiredOnly: true })],
    ["one tenant", list(sql, { tenantId: "ten_bench_42" })],
    ["one tenant, failed", list(sql, { tenantId: "ten_bench_42", state: "failed" })],
    ["procedure", list(sql, { procedure: "orders.create" })],
    ["key prefix", list(sql, { keyPrefix: "key-000a" })],
    ["key prefix, one tenant", list(sql, { keyPrefix: "key-000a", tenantId: "ten_bench_42" })],
    ["counts (global, estimated)", () => keyCounts({ sql }, {})],
    ["counts (one tenant, exact)", () => keyCounts({ sql }, { tenantId: "ten_bench_42" })],
    ["activity chart (last hour)", () => keyActivity({ sql }, {})],
  ];
  const results: { name: string; ms: number }[] = [];
  process.stdout.write(`${"query".padEnd(30)} ${"median ms".padStart(10)}  target < ${TARGET_MS} ms\n`);
  for (const [name, fn] of cases) {
    const ms = await median(fn);
    results.push({ name, ms });
    process.stdout.write(`${name.padEnd(30)} ${ms.toFixed(1).padStart(10)}  ${ms < TARGET_MS ? "met" : "MISSED"}\n`);
  }
  return results;
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
