/** The package's expiry sweep, started in every instance: expired keys and the events older than the retention. */
import { startExpirySweep as startPackageSweep } from "@exactly-once/trpc";
import { database } from "../../db/client";
import { env } from "../env";
import { logger } from "../logger";
import { instrument } from "../observability";
import { deleteEventsBefore, recordEvent } from "./events";

export function startExpirySweep(everyMs: number) {
  return startPackageSweep({
    sql: () => database().sql,
    everyMs,
    onEvent: (event) => recordEvent(event),
    onRound: async (deleted) => {
      instrument.expiredDeleted(deleted);
      if (deleted > 0) logger.info({ deleted }, "expired idempotency keys deleted");
      await deleteEventsBefore(new Date(Date.now() - env.IDEMPOTENCY_TTL_MS));
    },
    onError: (err) => logger.error({ err }, "expiry sweep failed"),
  });
}
