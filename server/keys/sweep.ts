/** The package's expiry sweep, started in every instance: expired keys and the events older than the retention. */
import { startExpirySweep as startPackageSweep } from "@exactly-once/trpc";
import type { Sql } from "postgres";
import { env } from "../env";
import { logger } from "../logger";
import { instrument } from "../observability";
import type { EventLog } from "./events";

export function startExpirySweep(everyMs: number, { sql, events }: { sql: () => Sql; events: EventLog }) {
  return startPackageSweep({
    sql,
    everyMs,
    onEvent: (event) => events.record(event),
    onRound: async (deleted) => {
      instrument.expiredDeleted(deleted);
      if (deleted > 0) logger.info({ deleted }, "expired idempotency keys deleted");
      await events.deleteBefore(new Date(Date.now() - env.IDEMPOTENCY_TTL_MS));
    },
    onError: (err) => logger.error({ err }, "expiry sweep failed"),
  });
}
