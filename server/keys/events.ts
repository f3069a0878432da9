/**
 * The sink for idempotency events: every event goes to the log at once, as
 * a debug line (`LOG_LEVEL=debug` shows them), and those the key row cannot
 * tell (conflicts, mismatches, waits, takeovers, releases, expiry, lost
 * leases) into `idempotency_events` in batches, off the request path.
 *
 * Replays are the common case and tell an operator little one by one, so
 * they are counted in memory per key (within one minute) and written every
 * 5 seconds (or when `flush` is called: tests, shutdown): one
 * `replayed` row per key with how many (`count`), and the same statement
 * adds them to the key's replay count and last replay. A replay itself
 * writes nothing, and a key replayed many times a second costs one row and
 * one update per 5 seconds. Every 5 seconds, not once a minute: the admin
 * dashboard refreshes every 5 seconds and shows the count, so an operator
 * who replays a key sees it counted on the next refresh but one. What a
 * crash loses is at most 5 seconds of replay counts, never an operator
 * event (those flush within 250 ms).
 *
 * One prepared statement takes the batch as arrays (`unnest`): its text is
 * the same for every batch size, and building it costs a few microseconds a
 * row, so a full batch never stalls the event loop. (Timestamps travel as
 * text[]: Drizzle, sharing the pool, passes timestamptz[] values through unserialised.)
 */
import type { Sql } from "postgres";
import { IdempotencyEventType, type IdempotencyEvent } from "@exactly-once/trpc";
import { logger } from "../logger";

const FLUSH_MS = 250;
const REPLAY_FLUSH_MS = 5_000;
const MAX_BATCH = 500;
/** So many keys replayed before the next write are written at once, which bounds the memory they hold. */
const MAX_REPLAYED_KEYS = 10_000;

/** `at`: when it happened, in microseconds since the epoch (`stamp`), written as text only with its batch. */
type Buffered = IdempotencyEvent & { at: number; traceId?: string };

let lastStamp = 0;

/**
 * Now, in microseconds and strictly increasing in this process: the events
 * of one request follow each other within a millisecond, and their rows are
 * read back in time order.
 */
function stamp(): number {
  lastStamp = Math.max(Date.now() * 1000, lastStamp + 1);
  return lastStamp;
}

/** A stamp as ISO text to the microsecond, for its row. */
const isoText = (at: number) => `${new Date(Math.floor(at / 1000)).toISOString().slice(0, 23)}${String(at % 1000).padStart(3, "0")}Z`;

const MINUTE_US = 60_000_000;

/** The key row records these itself (created_at and trace_id, completed_at, response_status, recovery_point): a debug line is enough. */
const ON_THE_KEY_ROW: ReadonlySet<string> = new Set([
  IdempotencyEventType.Claimed,
  IdempotencyEventType.Completed,
  IdempotencyEventType.PhaseCommitted,
  IdempotencyEventType.PhaseSkipped,
]);

export type EventLog = ReturnType<typeof createEventLog>;

/** The app's event sink over `sql` (the composition root builds one). */
export function createEventLog(sql: () => Sql) {
  let buffer: Buffered[] = [];
  let timer: NodeJS.Timeout | undefined;
  /** A key's replays since the last write (never across a minute): the row they become (`count` so far, `at` the last of them). */
  let replays = new Map<string, Buffered & { count: number }>();
  let replayTimer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();

  function countReplay(event: IdempotencyEvent, at: number): void {
    const bucket = `${event.tenantId}\0${event.key}\0${Math.floor(at / MINUTE_US)}`;
    const seen = replays.get(bucket);
    if (seen) {
      seen.count++;
      seen.at = at;
      seen.status = event.status;
      seen.fence = event.fence;
    } else replays.set(bucket, { ...event, count: 1, at });
    if (replays.size >= MAX_REPLAYED_KEYS) void flush();
    else replayTimer ??= setTimeout(() => void flush(), REPLAY_FLUSH_MS).unref();
  }

  /**
   * `traceId`: the recorded trace the event happened in (tracing on, the trace
   * sampled), kept on its row so the key's page leads to the trace. The trace
   * of the request that took the key is on the key row itself (`trace_id`).
   */
  function record(event: IdempotencyEvent, traceId?: string): void {
    // A debug line each: the events live in idempotency_events, /admin and the metrics, and at info they
    // would bury a terminal (a demo's start-up printed more event lines than anything else). Asked first: at the
    // usual level the line's arguments would be built on every request for nothing.
    if (logger.isLevelEnabled("debug")) logger.debug({ idempotency: event }, `idempotency ${event.type}`);
    if (ON_THE_KEY_ROW.has(event.type)) return;
    const at = stamp();
    if (event.type === IdempotencyEventType.Replayed) return countReplay(event, at);
    buffer.push({ ...event, at, traceId });
    if (buffer.length >= MAX_BATCH) void flush({ replays: false });
    else timer ??= setTimeout(() => void flush({ replays: false }), FLUSH_MS).unref();
  }

  function writeBatch(batch: Buffered[]) {
    const column = <T>(of: (e: Buffered) => T) => batch.map(of);
    return sql()`
      with inserted as (
        insert into idempotency_events (tenant_id, key, procedure, type, fence, status, recovery_point, count, waited_ms, at, trace_id)
        select * from unnest(
          ${column((e) => e.tenantId)}::text[], ${column((e) => e.key)}::text[], ${column((e) => e.procedure)}::text[],
          ${column((e) => e.type)}::text[], ${column((e) => e.fence ?? null)}::bigint[], ${column((e) => e.status ?? null)}::int[],
          ${column((e) => e.recoveryPoint ?? null)}::text[], ${column((e) => e.count ?? null)}::int[],
          ${column((e) => e.waitedMs ?? null)}::int[], ${column((e) => isoText(e.at))}::text[]::timestamptz[],
          ${column((e) => e.traceId ?? null)}::text[])
        returning tenant_id, key, type, count, at),
      replays as (
        select tenant_id, key, sum(coalesce(count, 1))::int as n, max(at) as last from inserted
        where type = ${IdempotencyEventType.Replayed} group by tenant_id, key)
      update idempotency_keys k set replay_count = k.replay_count + r.n, last_replayed_at = greatest(k.last_replayed_at, r.last)
      from replays r where k.tenant_id = r.tenant_id and k.key = r.key`;
  }

  /**
   * Writes what is buffered, and the replay counts unless `replays` is false
   * (the 250 ms timer of the other events leaves those to their own 5 s timer).
   * Tests and shutdown await it.
   */
  function flush(options: { replays?: boolean } = {}): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    const batch = buffer;
    buffer = [];
    if (options.replays !== false) {
      clearTimeout(replayTimer);
      replayTimer = undefined;
      batch.push(...replays.values());
      replays = new Map();
      // In time order, so the ids of one batch follow it too (a replayed row stands at its last replay).
      batch.sort((a, b) => a.at - b.at);
    }
    for (let from = 0; from < batch.length; from += MAX_BATCH) {
      const part = batch.slice(from, from + MAX_BATCH);
      flushing = flushing
        .then(() => writeBatch(part))
        .then(
          () => undefined,
          (err: unknown) => logger.error({ err, lost: part.length }, "writing idempotency events failed"),
        );
    }
    return flushing;
  }

  /**
   * Events live as long as the keys they describe: older than `retentionMs` by the database's clock, as a key's
   * expiry is. A number, not a Date: Drizzle, sharing the pool, replaced its timestamp serialisers, and a Date
   * parameter fails there.
   */
  async function deleteOlderThan(retentionMs: number): Promise<void> {
    await sql()`delete from idempotency_events where at < now() - make_interval(secs => ${retentionMs / 1000})`;
  }

  return { record, flush, deleteOlderThan };
}
