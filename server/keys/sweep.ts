/** The periodic in-process deletion of expired idempotency keys. */
import { env } from "../env";
import { logger } from "../logger";
import { instrument } from "../observability";
import { deleteExpiredKeys } from "./runtime";
import { deleteEventsBefore } from "./events";

export function startExpirySweep(everyMs: number) {
  if (everyMs <= 0) return { stop: () => undefined };
  const controller = new AbortController();
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    deleteExpiredKeys({ signal: controller.signal })
      .then(async (deleted) => {
        instrument.expiredDeleted(deleted);
        if (deleted > 0) logger.info({ deleted }, "expired idempotency keys deleted");
        await deleteEventsBefore(new Date(Date.now() - env.IDEMPOTENCY_TTL_MS));
      })
      .catch((err: unknown) => logger.error({ err }, "expiry sweep failed"))
      .finally(() => (running = false));
  }, everyMs);
  timer.unref();
  return {
    stop: () => {
      controller.abort();
      clearInterval(timer);
    },
  };
}
