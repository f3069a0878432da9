/**
 * The sink for idempotency events: every event goes to the log at once and
 * into `idempotency_events` in batches (one multi-row INSERT at most every
 * 250 ms), so counting them costs the request path nothing.
 */
import { lt } from "drizzle-orm";
import { database } from "../../db/client";
import { idempotencyEvents } from "../../db/schema";
import type { IdempotencyEvent } from "../idempotency/events";
import { logger } from "../logger";

const FLUSH_MS = 250;
const MAX_BATCH = 1000;

let buffer: (typeof idempotencyEvents.$inferInsert)[] = [];
let timer: NodeJS.Timeout | undefined;
let flushing: Promise<void> = Promise.resolve();

export function recordEvent(event: IdempotencyEvent): void {
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
