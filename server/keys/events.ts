/**
 * The sink for idempotency events: every event goes to the log at once, and
 * those the key row cannot tell (replays, conflicts, mismatches, takeovers,
 * releases, expiry, lost leases) into `idempotency_events` in batches (one
 * multi-row INSERT at most every 250 ms), off the request path.
 */
import { lt } from "drizzle-orm";
import { database } from "../../db/client";
import { idempotencyEvents } from "../../db/schema";
import { IdempotencyEventType, type IdempotencyEvent } from "../idempotency/events";
import { logger } from "../logger";

const FLUSH_MS = 250;
const MAX_BATCH = 1000;

let buffer: (typeof idempotencyEvents.$inferInsert)[] = [];
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
  buffer.push({
    tenantId: event.tenantId,
    key: event.key,
    procedure: event.procedure,
    type: event.type,
    fence: event.fence,
    status: event.status,
    recoveryPoint: event.recoveryPoint,
    count: event.count,
  });
  if (buffer.length >= MAX_BATCH) void flushEvents();
  else timer ??= setTimeout(() => void flushEvents(), FLUSH_MS).unref();
}

/** Writes what is buffered; tests and shutdown await it. */
export function flushEvents(): Promise<void> {
  clearTimeout(timer);
  timer = undefined;
  const batch = buffer;
  buffer = [];
  if (batch.length === 0) return flushing;
  flushing = flushing
    .then(() => database().db.insert(idempotencyEvents).values(batch))
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
