/**
 * `admin.keys.resume` ("Resume now"): runs the completer for one stale or
 * needs-attention key at once, as a client retry would, and answers with
 * what came of it. Refused while a holder's lease still runs (the holder may
 * be working), for a key that is not in progress, and for a procedure the
 * completer cannot run from its stored request. The attempt and its outcome
 * are recorded in the audit log.
 */
import type { Sql } from "postgres";
import { AdminAction } from "../../db/schema/admin";
import { DomainError, NotFoundError } from "../errors";
import { KeyState } from "@exactly-once/trpc";
import type { Completer, KeyCompletion } from "../keys/completer";
import { recordAudit } from "./audit";
import { isExpired, isStale } from "./key-state";
import type { KeyRefInput } from "./key-ref.schema";
import type { AdminSession } from "./session";

export type Resumed = { outcome: KeyCompletion["outcome"]; status: number | null; detail: string | null };

export async function resumeKey(ctx: { sql: Sql; admin: AdminSession; completer: Completer }, input: KeyRefInput): Promise<Resumed> {
  const q = ctx.sql;
  const { tenantId, key } = input;
  const [row] = await q<{ state: KeyState; procedure: string; expired: boolean; stale: boolean }[]>`
    select k.state, k.procedure, ${isExpired(q, "k")} as expired, ${isStale(q, "k")} as stale
    from idempotency_keys k where k.tenant_id = ${tenantId} and k.key = ${key}`;
  if (!row) throw new NotFoundError("idempotency key", key);
  if (row.state !== KeyState.InProgress || row.expired) {
    const shown = row.expired ? "expired" : row.state.replace("_", " ");
    throw new DomainError("key-not-resumable", 422, `Only an unfinished key can be resumed; this one is ${shown}.`, { tenantId, key });
  }
  if (!ctx.completer.resumableProcedures().includes(row.procedure)) {
    throw new DomainError(
      "key-not-resumable",
      422,
      `${row.procedure} cannot be run again from its stored request; a client retry must finish it.`,
      { tenantId, key },
    );
  }
  if (!row.stale) throw busy(tenantId, key);
  const [ran] = await ctx.completer.completeDueKeys({ tenantId, key, force: true, limit: 1 });
  // Taken up meanwhile by a client retry or a completer round: that attempt finishes it.
  if (!ran) throw busy(tenantId, key);
  const resumed: Resumed = {
    outcome: ran.outcome,
    status: ran.outcome === "completed" ? ran.status : null,
    detail: ran.outcome === "completed" ? null : ran.detail,
  };
  await recordAudit(q, { action: AdminAction.Resume, by: ctx.admin, tenantId, key, detail: resumed });
  return resumed;
}

const busy = (tenantId: string, key: string) =>
  new DomainError("key-busy", 409, "A request is working on this key right now (its lease still runs); try again when it is stale.", {
    tenantId,
    key,
  });
