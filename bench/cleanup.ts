/**
 * Expiry under load: writers (the wrapped mutation, in-process) alone, then
 * the same writers while `deleteExpired` works through 300,000 expired
 * keys. The ratio is the writers' throughput with the cleanup running over
 * without it (target ≥ 0.9), and the cleanup's own rate.
 */
import type { Sql } from "postgres";
import { app } from "../server/app";
import { drive, type Load } from "./measure";
import { inputFor } from "./scenarios";
import { seedExpired, WRITERS_WINDOW } from "./sweep";
import type { Transport } from "./transports";

const EXPIRED = 300_000;
const TARGET = 0.9;

export async function runCleanupBench(sql: Sql, t: Transport, load: Load): Promise<void> {
  const writers = (label: string) =>
    drive(async (n) => void (await t.wrapped(`cleanup-${label}-${n}-${Date.now()}`, inputFor(n), 1)), { ...load, ...WRITERS_WINDOW });
  await seedExpired(sql, EXPIRED, "warm-");
  const alone = await writers("alone");
  // The same amount of expired keys for the second window; the first batch was left in place.
  const started = performance.now();
  let deleted = 0;
  const cleanup = app.deleteExpired().then((n) => {
    deleted = n;
    return performance.now() - started;
  });
  const during = await writers("during");
  const cleanupMs = await cleanup;
  const ratio = during.opsPerSec / alone.opsPerSec;
  process.stdout.write(
    `\nExpiry under load (${t.name}, concurrency ${load.concurrency}): writers ${alone.opsPerSec.toFixed(0)} ops/s alone, ` +
      `${during.opsPerSec.toFixed(0)} ops/s while the cleanup deleted ${deleted.toLocaleString("en")} keys ` +
      `(${(deleted / (cleanupMs / 1000)).toFixed(0)} rows/s over ${(cleanupMs / 1000).toFixed(1)} s): ` +
      `ratio ${ratio.toFixed(2)}, target >= ${TARGET} ${ratio >= TARGET ? "met" : "missed"}\n`,
  );
}
