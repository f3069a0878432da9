/**
 * `npm run bench -- --sweep`: what the expiry sweep costs at scale. One
 * million expired keys, then eight writers (the wrapped mutation,
 * in-process) for a window alone and then for as long as `deleteExpired`
 * takes to delete all of them in its throttled batches. Prints the sweep's
 * rate and the writers' throughput and p99 with and without it.
 */
import type { Sql } from "postgres";
import { app } from "../server/app";
import { drive, median, type Load, type Sample } from "./measure";
import { inputFor } from "./scenarios";
import type { Transport } from "./transports";

const WRITERS = 8;
/**
 * A window of the writers beside a deletion (here and in cleanup.ts): its own length, not the rounds' 0.5 s, so
 * that each window overlaps the deletion's paced batches.
 */
export const WRITERS_WINDOW = { warmupMs: 500, durationMs: 2000 } satisfies Partial<Load>;

/** `count` keys that expired an hour ago, `prefix` and a number each, and the table analyzed. */
export async function seedExpired(sql: Sql, count: number, prefix = "sweep-") {
  // In slices: one statement of a million rows would hold a long transaction for nothing.
  for (let from = 1; from <= count; from += 100_000) {
    await sql`
      insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, created_at, expires_at)
      select 'ten_expired', ${prefix} || g, 'bench.wrapped', 'f', 'r', 'completed', 201, '{}', now() - interval '25 hours', now() - interval '1 hour'
      from generate_series(${from}::int, ${Math.min(from + 99_999, count)}::int) g`;
  }
  await sql`analyze idempotency_keys`;
}

/** The sweep's run: keys deleted, how long it took, and the writers' windows before it and while it ran. */
export type SweepUnderLoad = { deleted: number; seconds: number; alone: Sample[]; during: Sample[] };

/**
 * Eight writers (fresh keys through the middleware) for five windows alone, then for as long as `app.deleteExpired`
 * takes to delete every expired key in its paced batches: the sweep's rate while writers run, and what it costs them.
 */
export async function sweepUnderLoad(t: Transport, base: Load): Promise<SweepUnderLoad> {
  const load: Load = { ...base, ...WRITERS_WINDOW, concurrency: WRITERS };
  const window = (label: string, round: number) =>
    drive(async (n) => void (await t.wrapped(`sweep-${label}-${round}-${n}-${Date.now()}`, inputFor(n), 1)), load);
  const alone = [];
  for (let round = 0; round < 5; round++) alone.push(await window("alone", round));

  const started = performance.now();
  let cleanupMs: number | undefined;
  let deleted = 0;
  const cleanup = app.deleteExpired().then((n) => {
    deleted = n;
    cleanupMs = performance.now() - started;
  });
  const during = [];
  for (let round = 0; cleanupMs === undefined; round++) during.push(await window("during", round));
  await cleanup;
  return { deleted, seconds: (cleanupMs ?? 0) / 1000, alone, during };
}

export async function runSweepBench(sql: Sql, t: Transport, base: Load, expired: number): Promise<void> {
  const seeding = performance.now();
  await seedExpired(sql, expired);
  process.stdout.write(
    `\nExpiry sweep at scale: ${expired.toLocaleString("en")} expired keys seeded in ${((performance.now() - seeding) / 1000).toFixed(0)} s\n`,
  );
  const { deleted, seconds, alone, during } = await sweepUnderLoad(t, base);
  const ops = (windows: Sample[]) => median(windows.map((w) => w.opsPerSec));
  const p99 = (windows: Sample[]) => median(windows.map((w) => w.p99));
  const worst = (windows: Sample[]) => Math.max(...windows.map((w) => w.p99));
  const line = (label: string, windows: Sample[]) =>
    `${label.padEnd(18)} ${ops(windows).toFixed(0).padStart(6)} ops/s   ` +
    `p99 ${p99(windows).toFixed(1).padStart(7)} ms median of ${windows.length} windows, ${worst(windows).toFixed(1).padStart(7)} ms worst`;
  process.stdout.write(
    `sweep: ${deleted.toLocaleString("en")} keys deleted in ${seconds.toFixed(1)} s = ` +
      `${(deleted / (seconds || 1)).toFixed(0)} rows/s while ${WRITERS} writers ran\n` +
      `${line("writers alone", alone)}\n${line("writers + sweep", during)}\n` +
      `ratio ${(ops(during) / ops(alone)).toFixed(2)} (throughput), ${(p99(during) / p99(alone)).toFixed(2)} (median p99)\n`,
  );
}
