/**
 * The sink for idempotency events: every event goes to the log at once, and
 * those the key row cannot tell (replays, conflicts, mismatches, takeovers,
 * releases, expiry, lost leases) into `idempotency_events` in batches, off
 * the request path. The same batch adds its replays to the keys' replay count
 * and last replay, so a replay itself writes nothing.
 *
 * One prepared statement takes the batch as arrays (`unnest`): its text is
 * the same for every batch size, and building it costs a few microseconds a
 * row, so a full batch never stalls the event loop. (Timestamps travel as
 * text[]: Drizzle, sharing the pool, passes timestamptz[] values through unserialised.)
 */
import { lt } from "drizzle-orm";
import { database } from "../../db/client";
import { idempotencyEvents } from "../../db/schema";
import { IdempotencyEventType, type IdempotencyEvent } from "../idempotency";
import { logger } from "../logger";

const FLUSH_MS = 250;
const MAX_BATCH = 500;

type Buffered = IdempotencyEvent & { at: string };

let buffer: Buffered[] = [];
let timer: NodeJS.Timeout | undefined;
let flushing: Promise<void> = Promise.resolve();

/** The key row records these itself (created_at, completed_at, response_status): a debug line is enough. */
const ON_THE_KEY_ROW: ReadonlySet<string> = new Set([IdempotencyEventType.Claimed, IdempotencyEventType.Completed]);

export function recordEvent(event: IdempotencyEvent): void {
  if (ON_THE_KEY_ROW.has(event.type)) {
    logger.debug({ idempotency: event }, `idempotency ${event.type}`);
    return;
  }
  logger.info({ idempotency: event }, `idempotency ${event.type}`);
  buffer.push({ ...event, at: new Date().toISOString() });
  if (buffer.length >= MAX_BATCH) void flushEvents();
  else timer ??= setTimeout(() => void flushEvents(), FLUSH_MS).unref();
}

function writeBatch(batch: Buffered[]) {
  const column = <T>(of: (e: Buffered) => T) => batch.map(of);
  return database().sql`
    with inserted as (
      insert into idempotency_events (tenant_id, key, procedure, type, fence, status, recovery_point, count, waited_ms, at)
      select * from unnest(
        ${column((e) => e.tenantId)}::text[], ${column((e) => e.key)}::text[], ${column((e) => e.procedure)}::text[],
        ${column((e) => e.type)}::text[], ${column((e) => e.fence ?? null)}::bigint[], ${column((e) => e.status ?? null)}::int[],
        ${column((e) => e.recoveryPoint ?? null)}::text[], ${column((e) => e.count ?? null)}::int[],
        ${column((e) => e.waitedMs ?? null)}::int[], ${column((e) => e.at)}::text[]::timestamptz[])
      returning tenant_id, key, type, at),
    replays as (
      select tenant_id, key, count(*)::int as n, max(at) as last from inserted
      where type = ${IdempotencyEventType.Replayed} group by tenant_id, key)
    update idempotency_keys k set replay_count = k.replay_count + r.n, last_replayed_at = greatest(k.last_replayed_at, r.last)
    from replays r where k.tenant_id = r.tenant_id and k.key = r.key`;
}

/** Writes what is buffered; tests and shutdown await it. */
export function flushEvents(): Promise<void> {
  clearTimeout(timer);
  timer = undefined;
  const batch = buffer;
  buffer = [];
  if (batch.length === 0) return flushing;
  flushing = flushing
    .then(() => writeBatch(batch))
    .then(
      () => undefined,
      (err: unknown) => logger.error({ err, lost: batch.length }, "writing idempotency events failed"),
    );
  return flushing;
}

/** Events live as long as the keys they describe. */
export async function deleteEventsBefore(cutoff: Date): Promise<void> {
  await database().db.delete(idempotencyEvents).where(lt(idempotencyEvents.at, cutoff));
}
