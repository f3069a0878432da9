/** The package's expiry sweep, started in every instance: expired keys and the events older than the retention. */
import { startExpirySweep as startPackageSweep } from "@exactly-once/trpc";
import type { Sql } from "postgres";
import { logger } from "../logger";
import { instrument } from "../observability";
import type { EventLog } from "./events";

/** A round every `everyMs`; events older than `retentionMs` (the keys' own retention) go with the expired keys. */
export function startExpirySweep(
  { everyMs, retentionMs }: { everyMs: number; retentionMs: number },
  { sql, events }: { sql: () => Sql; events: EventLog },
) {
  return startPackageSweep({
    sql,
    everyMs,
    onEvent: (event) => events.record(event),
    onRound: async (deleted) => {
      instrument.expiredDeleted(deleted);
      if (deleted > 0) logger.info({ deleted }, "expired idempotency keys deleted");
      await events.deleteOlderThan(retentionMs);
    },
    onError: (err) => logger.error({ err }, "expiry sweep failed"),
  });
}
