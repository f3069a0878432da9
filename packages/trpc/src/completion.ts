/**
 * The SQL of the completer: finishing keys whose client never came back.
 *
 * A completer does not run anything itself. It claims due keys here (stale,
 * resumable, not given up, past their backoff) and the app runs each one
 * again through the same procedure with the same key: the acquisition step
 * takes the key over under a new fence, exactly as for a client retry. The
 * claim is only a schedule: it picks keys with `FOR UPDATE SKIP LOCKED`, so
 * two completers never pick the same key in one round, and in the same
 * statement bumps the attempt count and moves the next attempt out
 * (exponential backoff with jitter, capped), so a key that another instance
 * just picked is not due again for a while. Exclusion of the work itself is
 * the acquisition's advisory lock and fence, never this claim.
 */
import type { Sql } from "postgres";
import { isDue, isStale } from "./rules.js";
import { CompletedBy, KeyState } from "./states.js";
import type { KeyRef } from "./store.js";

export type CompletionPolicy = {
  /** After this many attempts that did not finish the work, the key needs attention. */
  maxAttempts: number;
  /** The first retry waits about this long; each further one twice as long (with jitter), up to `maxBackoffMs`. */
  backoffMs: number;
  maxBackoffMs: number;
};

/** A key taken up by a completer: what a re-run needs (tenant, key, procedure, the stored canonical request). */
export type DueKey = KeyRef & { procedure: string; request: string; attempt: number };

type RawDue = { tenant_id: string; key: string; procedure: string; request: string; attempt: number; gave_up: boolean };

export type ClaimOptions = CompletionPolicy & {
  /** Only keys of these procedures are taken up (the resumable ones). */
  procedures: readonly string[];
  limit: number;
  /** Narrow to one tenant (tests, a tenant's own run) or one key (the operator's "Resume now"). */
  tenantId?: string;
  key?: string;
  /** The operator's "Resume now": the key only has to be stale; backoff and a given-up state are ignored. */
  force?: boolean;
};

/**
 * Claims up to `limit` due keys in one statement. A key that has used up its
 * attempts (the process running the last one died before it could say so)
 * is marked given up here instead of being returned.
 */
export async function claimDue(sql: Sql, o: ClaimOptions): Promise<DueKey[]> {
  const scope = [
    o.tenantId === undefined ? sql`` : sql`and k.tenant_id = ${o.tenantId}`,
    o.key === undefined ? sql`` : sql`and k.key = ${o.key}`,
  ];
  const force = o.force === true;
  const rows = await sql<RawDue[]>`
    with due as (
      select k.tenant_id, k.key, (not ${force} and k.completer_attempts >= ${o.maxAttempts}) as exhausted
      from idempotency_keys k
      where ${force ? isStale(sql, "k") : isDue(sql, "k")} and k.procedure = any(${[...o.procedures]}::text[]) ${scope[0]!} ${scope[1]!}
      order by k.locked_until nulls first
      limit ${o.limit}
      for update skip locked)
    update idempotency_keys k set
      completer_attempts = k.completer_attempts + case when due.exhausted then 0 else 1 end,
      completer_next_at = now() + least(${o.maxBackoffMs}::float8, ${o.backoffMs}::float8 * power(2, least(k.completer_attempts, 30)))
                                  * (0.5 + random() / 2) * interval '1 millisecond',
      completer_gave_up_at = case when due.exhausted then now() else k.completer_gave_up_at end,
      completer_error = case when due.exhausted then coalesce(k.completer_error, 'the attempt limit was reached') else k.completer_error end
    from due where k.tenant_id = due.tenant_id and k.key = due.key
    returning k.tenant_id, k.key, k.procedure, k.request, k.completer_attempts as attempt, due.exhausted as gave_up`;
  return rows
    .filter((r) => !r.gave_up)
    .map((r) => ({ tenantId: r.tenant_id, key: r.key, procedure: r.procedure, request: r.request, attempt: r.attempt }));
}

/** The completer stored the key's result itself: say so on the key. A completed key changes no more, so this needs no fence. */
export async function markCompletedByCompleter(sql: Sql, k: KeyRef): Promise<void> {
  await sql`
    update idempotency_keys set completed_by = ${CompletedBy.Completer}, completer_error = null
    where tenant_id = ${k.tenantId} and key = ${k.key} and state <> ${KeyState.InProgress}`;
}

/** An attempt did not finish the work: keep why, and give up once the attempts are used up. */
export async function recordCompleterFailure(sql: Sql, k: KeyRef, error: string, maxAttempts: number): Promise<{ gaveUp: boolean }> {
  const rows = await sql<{ gave_up: boolean }[]>`
    update idempotency_keys set
      completer_error = ${error},
      completer_gave_up_at = case when completer_attempts >= ${maxAttempts} then coalesce(completer_gave_up_at, now()) else completer_gave_up_at end
    where tenant_id = ${k.tenantId} and key = ${k.key} and state = ${KeyState.InProgress}
    returning completer_gave_up_at is not null as gave_up`;
  return { gaveUp: rows[0]?.gave_up ?? false };
}

/** Nothing can run (the stored request no longer parses): the key needs attention now, with the reason. */
export async function giveUp(sql: Sql, k: KeyRef, reason: string): Promise<void> {
  await sql`
    update idempotency_keys set completer_error = ${reason}, completer_gave_up_at = coalesce(completer_gave_up_at, now())
    where tenant_id = ${k.tenantId} and key = ${k.key} and state = ${KeyState.InProgress}`;
}

/** The procedure path and the canonical input of a stored request (`<path>\n<canonical JSON>`, canonical.ts). */
export function storedInput(request: string): { procedure: string; input: unknown } {
  const newline = request.indexOf("\n");
  if (newline < 0) throw new SyntaxError("the stored request has no procedure line");
  return { procedure: request.slice(0, newline), input: JSON.parse(request.slice(newline + 1)) as unknown };
}
