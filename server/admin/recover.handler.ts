/**
 * `admin.keys.recover`: ends the lease of an in-progress key now, so the
 * next retry takes it over at once instead of waiting out the lease (the
 * middleware's operator release; safe even if the holder is alive).
 *
 * The change and its audit entry commit together.
 */
import type { Sql } from "postgres";
import type { Database } from "../../db/client";
import { AdminAction } from "../../db/schema/admin";
import { DomainError, NotFoundError } from "../errors";
import { releaseKey } from "@exactly-once/trpc";
import type { AdminSession } from "./session";
import { recordAudit } from "./audit";
import type { KeyRefInput } from "./key-ref.schema";

export type Recovered = { fence: number; previousLockedUntil: string | null; wasStale: boolean };

export async function recoverKey(
  ctx: { pool: Pick<Database, "begin">; sql: Sql; admin: AdminSession },
  input: KeyRefInput,
): Promise<Recovered> {
  const { tenantId, key } = input;
  return ctx.pool.begin(async (q) => {
    const released = await releaseKey(q, { tenantId, key });
    switch (released.kind) {
      case "not-found":
        throw new NotFoundError("idempotency key", key);
      case "busy":
        throw new DomainError("key-busy", 409, "A request is working on this key right now; try again in a moment.", { tenantId, key });
      case "not-in-progress":
        throw new DomainError(
          "key-not-recoverable",
          422,
          `Only an in-progress key can be recovered; this one is ${released.state.replace("_", " ")}.`,
          { tenantId, key },
        );
      case "released": {
        const recovered: Recovered = {
          fence: released.fence,
          previousLockedUntil: released.previousLockedUntil,
          wasStale: released.wasStale,
        };
        await recordAudit(q, { action: AdminAction.Recover, by: ctx.admin, tenantId, key, detail: recovered });
        return recovered;
      }
    }
  });
}
