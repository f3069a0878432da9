/**
 * `npm run bench -- --live-keys N`: what a key costs when there are many.
 * After the usual rounds, a second key table (the package's own migration,
 * in a schema of its own) gets the run's keys so far, N completed live keys
 * over 100 tenants (the run's tenant one of them) and N/10 expired ones the
 * sweep has not reached, each row the size of a real `payments.create`
 * key's. The two tables then take turns in `public`, where the app's
 * statements find the table, for the same rounds in the order @N @0 @0 @N:
 * both sides run in the same process on the same database, and a machine
 * that gets busier or quieter over the minutes moves both alike. PostgreSQL
 * re-plans a prepared statement whose table moved, so each side runs on its
 * own table. Then, at N: the admin dashboard, and the expiry sweep while
 * writers run.
 */
import { performance } from "node:perf_hooks";
import { migrate } from "@exactly-once/trpc";
import type { Sql } from "postgres";
import { ADMIN_TARGET_MS, FIRST_PAGE, OVERVIEW, type AdminTiming } from "./admin";
import { median, type Sample } from "./measure";
import { judged, nodeUs, pgUs, table, type TransportResult } from "./report";
import type { SweepUnderLoad } from "./sweep";

/** 500,000 rows a statement: each batch commits on its own, so the fill holds no transaction for minutes. */
const BATCH = 500_000;
const TENANTS = 100;
const AT_N_MAX = 1.15;
const SWEEP_MIN = 2;

/** Where the filled table waits while the rounds run on the run's own, and where that one waits in turn. */
const LIVE = "eo_live_keys";
const PARKED = "eo_parked_keys";

export const Side = { Empty: "empty", Live: "live" } as const;
export type Side = (typeof Side)[keyof typeof Side];

export type Fill = { live: number; expired: number; seconds: number; vacuumSeconds: number; heapBytes: number; indexBytes: number };

/**
 * One batch of rows g in [from, to], oldest first, so the heap is in time order as a live table's is:
 * the `expired` rows expired over the last hour, the rest were created over the last 24 hours and live
 * 24 hours. Every column as a completed `payments.create` key of the app stores it (a 712-byte row:
 * a 255-byte response body, a 93-byte canonical request, its recovery point and data); the amounts,
 * destinations and ids vary, so no two bodies are alike.
 */
function insertBatch(sql: Sql, tenantId: string, fill: { live: number; expired: number }, from: number, to: number) {
  return sql`
    insert into eo_live_keys.idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, recovery_point, recovery_data,
                                  response_status, response_body, created_at, updated_at, completed_at, expires_at)
    select r.tenant_id, gen_random_uuid()::text, 'payments.create', md5(r.g::text) || md5((-r.g)::text),
           'payments.create' || chr(10) || '{"amount":' || r.minor || ',"capture":true,"currency":"EUR","destination":"' || r.destination || '"}',
           'completed', 'charged',
           jsonb_build_object('charged', jsonb_build_object('outcome', 'charged'), 'created', jsonb_build_object('paymentId', r.payment)),
           201,
           '{"id":"' || r.payment || '","status":"succeeded","amount":"' || r.amount || '","currency":"EUR","destination":"' ||
             r.destination || '","captureMethod":"automatic","amountCaptured":"' || r.amount ||
             '","amountRefunded":"0.00","failureReason":null,"createdAt":"' ||
             to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"}',
           r.created_at, r.created_at + interval '40 milliseconds', r.created_at + interval '40 milliseconds', r.created_at + interval '24 hours'
    from (
      select g,
             case g % ${TENANTS} when 0 then ${tenantId} else 'ten_' || lpad('live' || g % ${TENANTS}, 20, '0') end as tenant_id,
             'pay_' || left(md5('p' || g), 20) as payment,
             100 + g % 99900 as minor,
             to_char((100 + g % 99900) / 100.0, 'FM999990.00') as amount,
             'acct_test_' || g % 1000 as destination,
             case when g <= ${fill.expired}
                  then now() - interval '25 hours' + g * (interval '1 hour' / ${Math.max(1, fill.expired)})
                  else now() - interval '24 hours' + (g - ${fill.expired}) * (interval '24 hours' / ${fill.live}) end as created_at
      from generate_series(${from}::bigint, ${to}::bigint) g) r`;
}

const seconds = (since: number) => (performance.now() - since) / 1000;
const gb = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(2)} GB`;

/**
 * Builds the second key table (see above; the run's replayed keys among those copied), a progress line a batch.
 * Then VACUUM (ANALYZE), as autovacuum would soon after so many inserts (run now, it cannot land inside a
 * measured window), and a CHECKPOINT, so the fill's dirty pages are written before the rounds instead of during them.
 */
export async function fillLiveKeys(sql: Sql, tenantId: string, live: number, log: (line: string) => void): Promise<Fill> {
  await migrate(sql, { schema: LIVE });
  await sql`create schema if not exists ${sql(PARKED)}`;
  const [{ columns } = { columns: "" }] = await sql<{ columns: string }[]>`
    select string_agg(quote_ident(column_name), ', ' order by ordinal_position) as columns
    from information_schema.columns where table_schema = 'public' and table_name = 'idempotency_keys'`;
  await sql.unsafe(`insert into ${LIVE}.idempotency_keys (${columns}) select ${columns} from public.idempotency_keys`);
  const expired = Math.floor(live / 10);
  const total = live + expired;
  const started = performance.now();
  for (let from = 1; from <= total; from += BATCH) {
    const to = Math.min(from + BATCH - 1, total);
    await insertBatch(sql, tenantId, { live, expired }, from, to);
    log(`live keys: ${to.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} rows in ${seconds(started).toFixed(0)} s`);
  }
  const filled = seconds(started);
  const vacuuming = performance.now();
  await sql.unsafe(`vacuum (analyze) ${LIVE}.idempotency_keys`);
  await sql`checkpoint`;
  const vacuumSeconds = seconds(vacuuming);
  const table = `${LIVE}.idempotency_keys`;
  const [size] = await sql<{ heap: string; indexes: string }[]>`
    select pg_table_size(${table}::regclass)::text as heap, pg_indexes_size(${table}::regclass)::text as indexes`;
  return { live, expired, seconds: filled, vacuumSeconds, heapBytes: Number(size!.heap), indexBytes: Number(size!.indexes) };
}

/** Puts `side`'s key table in `public` (if it is not there yet), the other one aside; the filled one starts aside. */
export async function switchKeyTable(sql: Sql, side: Side): Promise<void> {
  const [from, to] = side === Side.Live ? [LIVE, PARKED] : [PARKED, LIVE];
  const [row] = await sql<{ aside: boolean }[]>`select to_regclass(${`${from}.idempotency_keys`}) is not null as aside`;
  if (!row?.aside) return;
  // One simple query is one transaction: no moment without a key table in public.
  await sql.unsafe(`alter table public.idempotency_keys set schema ${to}; alter table ${from}.idempotency_keys set schema public`).simple();
}

export function describeFill(fill: Fill): string {
  return (
    `${fill.live.toLocaleString("en-US")} live + ${fill.expired.toLocaleString("en-US")} expired keys over ${TENANTS} tenants: ` +
    `filled in ${fill.seconds.toFixed(0)} s (${Math.round((fill.live + fill.expired) / fill.seconds).toLocaleString("en-US")} rows/s), ` +
    `VACUUM (ANALYZE) and CHECKPOINT ${fill.vacuumSeconds.toFixed(0)} s; ` +
    `idempotency_keys ${gb(fill.heapBytes)} + indexes ${gb(fill.indexBytes)} = ${gb(fill.heapBytes + fill.indexBytes)} (pg_total_relation_size)`
  );
}

/** Passes of the usual rounds on each side, each a result per transport. */
export type Passes = Record<Side, TransportResult[][]>;

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

/** A metric's mean over the passes at N over its mean over the passes at 0 (@N @0 @0 @N: a steady drift cancels). */
function atNOver0(passes: Passes, transport: string, scenario: (r: TransportResult) => Sample, of: (s: Sample) => number | undefined) {
  const side = (results: TransportResult[][]) =>
    mean(results.map((pass) => of(scenario(pass.find((r) => r.transport === transport)!)) ?? Number.NaN));
  return side(passes.live) / side(passes.empty);
}

/** The @N/@0 rows of each transport, the sweep's rate over the writers', and the dashboard's p95s at N. */
export function renderLiveKeys(passes: Passes, sweep: SweepUnderLoad, admin: AdminTiming[], live: number): string {
  const n = live.toLocaleString("en-US");
  const rows = passes.empty[0]!.flatMap(({ transport }) => {
    const row = (name: string, scenario: (r: TransportResult) => Sample, side: "pg" | "node") => [
      transport,
      `${name} @${n}/@0 ${side} us/op`,
      ...judged(atNOver0(passes, transport, scenario, side === "pg" ? pgUs : nodeUs), AT_N_MAX, true),
    ];
    const wrapped = (r: TransportResult) => r.writes.subject;
    return [row("wrapped", wrapped, "pg"), row("wrapped", wrapped, "node"), row("replay", (r) => r.reads.subject, "pg")];
  });
  const writeRate = median(sweep.during.map((w) => w.opsPerSec));
  rows.push(["in-process", "sweep/write rate", ...judged(sweep.deleted / sweep.seconds / writeRate, SWEEP_MIN)]);
  for (const [name, label] of [
    [OVERVIEW, "admin overview p95 ms"],
    [FIRST_PAGE, "admin keys list p95 ms"],
  ] as const) {
    rows.push(["in-process", `${label} @${n}`, ...judged(admin.find((a) => a.name === name)!.p95, ADMIN_TARGET_MS, true)]);
  }
  const rates =
    `sweep: ${sweep.deleted.toLocaleString("en-US")} expired keys deleted in ${sweep.seconds.toFixed(1)} s ` +
    `(${Math.round(sweep.deleted / sweep.seconds).toLocaleString("en-US")} rows/s) while writers wrote ${Math.round(writeRate).toLocaleString("en-US")} keys/s`;
  return `${table(["transport", "ratio", "value", "target", ""], rows, new Set([2]))}\n${rates}\n`;
}
