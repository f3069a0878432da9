/**
 * The one acquisition step both flavours use. Given an attempt, it takes the
 * key's transaction-scoped advisory lock, reads the key row, and applies the
 * decision table of README.md (`decide`, its only copy in code):
 * - you own the key: `work` runs inside the locked transaction with the fence
 *   to write under and where the work stands (recovery point and data);
 * - replay this stored result;
 * - or a refusal: mismatch (422), still in progress after the wait (409).
 * A duplicate that had to wait for the key (at the unique index, for its
 * advisory lock, for a holder with a live lease, or for several of these in
 * turn) reports one `waited` event with the whole time, before what it then
 * does (`reportWait`).
 *
 * The lock is what makes the two flavours exclude each other on one key, and
 * it is transaction-scoped (pg_advisory_xact_lock), so it also holds behind a
 * transaction-mode pooler and ends with the transaction, whatever happens.
 */
import { createHash } from "node:crypto";
import { TRPCError } from "@trpc/server";
import type { ISql, Sql } from "postgres";
import { IdempotencyKeyInProgressError, IdempotencyKeyMismatchError, type IdempotencyError } from "./errors.js";
import { IdempotencyEventType as E, type IdempotencyEvent } from "./events.js";
import { KeyState } from "./states.js";
import * as store from "./store.js";
import { inTransaction, isLockTimeout, setLocalLockTimeout, type KeyTransaction, type Pool } from "./transaction.js";
import type { KeyTake, TransactionLimits } from "./types.js";

/** One request's hold on its key: what it would store, its budgets, and how it reports events. */
export type Attempt = store.Request & {
  leaseMs: number;
  /** How long a recoverable holder renews its lease at most (ProcedureOptions.maxHoldMs). */
  maxHoldMs: number;
  /** How long a duplicate waits for the holder before `409`; 0 answers at once. */
  waitMs: number;
  /** The client said this is its first send of the key (`Idempotency-Attempt: 1`, key.ts): no stored answer is looked for first. */
  firstSend: boolean;
  /** The bounds the key's transactions run under. */
  limits: TransactionLimits;
  /** What each of its transactions sends with BEGIN to put `limits` on itself: the SET LOCALs of those its connection does not carry already (`setLocalLimits`), often none. */
  setup: string;
  event: (type: IdempotencyEvent["type"], extra?: Partial<IdempotencyEvent>) => void;
  /** How long this attempt has waited for the key in all (its outcome's `waitedMs`); undefined: no wait. */
  waitedMs?: number;
  /** How much of `waitedMs` a `waited` event reported already. */
  reportedWaitMs?: number;
  /** The runtime's `admitNewKey` for this call, when it has one. */
  admitNewKey?: () => Promise<void> | void;
};

/** Adds a wait of this attempt, reported with the others as one `waited` event (`reportWait`). */
export function noteWait(a: Attempt, since: number): void {
  a.waitedMs = (a.waitedMs ?? 0) + (performance.now() - since);
}

/** Reports what the attempt waited and no event reported yet, before what it then does (take, replay, refusal). */
export function reportWait(a: Attempt): void {
  if (a.waitedMs === a.reportedWaitMs) return;
  a.event(E.Waited, { waitedMs: Math.round(a.waitedMs! - (a.reportedWaitMs ?? 0)) });
  a.reportedWaitMs = a.waitedMs;
}

export const Decision = {
  Claim: "claim",
  Replay: "replay",
  Mismatch: "mismatch",
  Wait: "wait",
  Takeover: "takeover",
  Replace: "replace",
} as const;
export type Decision = (typeof Decision)[keyof typeof Decision];

/** The decision table of README.md: what an attempt does with the key row it finds (or does not). */
export function decide(row: store.Decidable | undefined, fingerprint: string): Decision {
  if (!row) return Decision.Claim;
  if (row.expired) return Decision.Replace;
  if (row.fingerprint !== fingerprint) return Decision.Mismatch;
  if (row.state !== KeyState.InProgress) return Decision.Replay;
  return row.leaseOver ? Decision.Takeover : Decision.Wait;
}

/** Whether the take inserts a key row its scope does not hold (none, or an expired one replaced): only those ask `admitNewKey`. */
const insertsNewKey = (decision: Decision) => decision === Decision.Claim || decision === Decision.Replace;

/**
 * Asks the app before a new key row goes in (`IdempotencyRuntime.admitNewKey`),
 * once the attempt knows it would insert one. `looked`: the attempt read the
 * key's row and found none to answer from; an attempt that did not look (a
 * client's first send, `Idempotency-Attempt: 1`) and is refused looks now,
 * so a client that said so wrongly still gets what the key holds, as a
 * retry does: that row is returned for the caller to decide on.
 */
export async function admitNewKey(q: ISql, a: Attempt, looked: boolean): Promise<store.Decidable | undefined> {
  if (!a.admitNewKey) return undefined;
  reportWait(a);
  try {
    await a.admitNewKey();
    return undefined;
  } catch (refusal) {
    const row = looked ? undefined : store.peeked(await store.peek(q, a));
    if (!row) throw refusal;
    return row;
  }
}

/** The event a take is reported as. */
const TAKEN: Record<KeyTake, IdempotencyEvent["type"]> = {
  [Decision.Claim]: E.Claimed,
  [Decision.Takeover]: E.Takeover,
  [Decision.Replace]: E.Expired,
};

/** Reports how the key was taken (claimed, taken over, replaced after expiry), once the flavour holds it. */
export function announce(a: Attempt, owned: Owned): void {
  reportWait(a);
  a.event(TAKEN[owned.how], { fence: owned.fence, ...(owned.how === Decision.Takeover && { recoveryPoint: owned.recoveryPoint }) });
}

/** What the owner of a key gets: the fence it writes under, and the fence the row had before (0: no row). */
export type Owned = Omit<store.Claim, "generation"> & { seenFence: number; how: KeyTake };

export type Acquired<T> = { kind: "owned"; value: T } | { kind: "replay"; row: store.Decidable };

/** A 64-bit lock id for the key, the same in every process (the advisory lock space is per database). */
export function lockId(k: store.KeyRef): string {
  return createHash("sha256").update(`${k.tenantId}\0${k.key}`).digest().readBigInt64BE(0).toString();
}

/** Seconds until the holder's lease runs out, at least 1 (an atomic holder has no lease on record: 1). */
export const retryAfterSeconds = (row: store.KeyRow | undefined) => Math.max(1, Math.ceil((row?.leaseMsLeft ?? 0) / 1000));

/** Reports the refusal as an event and throws it as the tRPC error the transports map. */
export function refuse(a: Attempt, error: IdempotencyError): never {
  reportWait(a);
  if (error instanceof IdempotencyKeyMismatchError) a.event(E.Mismatch);
  if (error instanceof IdempotencyKeyInProgressError) a.event(E.Conflict);
  throw new TRPCError({ code: error.code, message: error.message, cause: error });
}

/** A row that is answered as it stands, whoever holds the lock: a replay, or a mismatch (422). */
function answersWithoutLock(row: store.KeyRow | undefined, a: Attempt): boolean {
  const decision = decide(row, a.fingerprint);
  return decision === Decision.Replay || decision === Decision.Mismatch;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Opens the key's transaction: BEGIN with the limits its connection does
 * not carry (`SET LOCAL`, one simple query), then one prepared statement
 * that tries the advisory lock and reads the row (`store.take`), and an
 * optional savepoint after the lock
 * (a rollback to it keeps the lock). The limits are SET LOCAL in BEGIN's
 * query rather than `set_config(…, true)` columns of the take, which cost
 * the server more per fresh key under concurrency. So an attempt nobody
 * holds the key against costs one round trip of three statements, and so
 * does a replay or a mismatch: a completed key does not change until it
 * expires and a key's fingerprint never does, so those are
 * decided on the row as read, without the lock. Only when another holds the
 * lock and the row does not decide it already does a second round trip wait
 * for the lock (at most `waitMs`) and read the row again by a statement of
 * its own, which sees what that holder committed; the wait counts in the
 * attempt's `waited` (`noteWait`).
 */
async function lockAndLoad(t: KeyTransaction, a: Attempt, savepoint: string | undefined): Promise<store.KeyRow | undefined> {
  const id = lockId(a);
  const [[taken]] = await t.begin(a.setup, store.take(t.conn, a, id), ...(savepoint ? [t.conn.unsafe(`savepoint ${savepoint}`)] : []));
  const row = store.loaded([taken!]);
  if (taken!.locked || answersWithoutLock(row, a)) return row;

  const own = a.waitMs !== a.limits.lockTimeoutMs;
  const wait = [
    // The savepoint was taken before the lock: a rollback to it would let the lock go, so it is taken again after.
    savepoint ? `release savepoint ${savepoint}` : "",
    own ? setLocalLockTimeout(a.waitMs) : "",
    `select pg_advisory_xact_lock(${id})`,
    own ? setLocalLockTimeout(a.limits.lockTimeoutMs) : "",
    savepoint ? `savepoint ${savepoint}` : "",
  ].filter(Boolean);
  const waitedFrom = performance.now();
  try {
    const [, reloaded] = await t.send(t.conn.unsafe(wait.join("; ")), store.load(t.conn, a));
    return store.loaded(reloaded);
  } finally {
    noteWait(a, waitedFrom);
  }
}

/** Polls a holder with a live lease until it finishes, lets go, or the wait budget is spent (409). */
async function waitForHolder(sql: Sql, a: Attempt): Promise<store.KeyRow | undefined> {
  const since = performance.now();
  const deadline = Date.now() + a.waitMs;
  for (let pause = 20; ; pause = Math.min(pause * 2, 250)) {
    const row = store.loaded(await store.load(sql, a));
    const done = decide(row, a.fingerprint) !== Decision.Wait;
    if (done || Date.now() + pause > deadline) noteWait(a, since);
    if (done) return row;
    if (Date.now() + pause > deadline) refuse(a, new IdempotencyKeyInProgressError(a.key, retryAfterSeconds(row)));
    await sleep(pause);
  }
}

/**
 * The acquisition step, the locking way. Both flavours come here only after
 * their own look at the row (`store.peek`) neither answered nor claimed the
 * key, so it starts with the lock: the take reads the row again under it,
 * and a replay or a mismatch is still decided on that row at once. `work`
 * runs in the locked transaction once the key is this attempt's to take,
 * and must end that transaction (commit) or return undefined to look again
 * (the row changed under a lock-free writer, or since `take` read it: then
 * its take fails, and that is looked again too).
 */
export async function acquire<T>(
  { sql, reserve }: Pool,
  a: Attempt,
  work: (t: KeyTransaction, owned: Owned) => Promise<T | undefined>,
  options: { savepoint?: string } = {},
): Promise<Acquired<T>> {
  for (;;) {
    const step = await inTransaction(reserve, async (t): Promise<Acquired<T> | { kind: "wait" } | undefined> => {
      let row: store.KeyRow | undefined;
      try {
        row = await lockAndLoad(t, a, options.savepoint);
      } catch (error) {
        if (!isLockTimeout(error)) throw error;
        await t.rollback();
        refuse(a, new IdempotencyKeyInProgressError(a.key, retryAfterSeconds(store.loaded(await store.load(sql, a))), { cause: error }));
      }
      const decision = decide(row, a.fingerprint);
      if (decision === Decision.Replay) {
        reportWait(a);
        return { kind: "replay", row: row! };
      }
      if (decision === Decision.Mismatch) refuse(a, new IdempotencyKeyMismatchError(a.key, row!.procedure));
      if (decision === Decision.Wait) return { kind: "wait" };
      if (insertsNewKey(decision)) await admitNewKey(t.conn, a, true);
      const owned: Owned = {
        fence: (row?.fence ?? 0) + 1,
        seenFence: row?.fence ?? 0,
        how: decision,
        // A replaced key starts over; a taken-over key resumes where its last holder got to.
        recoveryPoint: decision === Decision.Takeover ? row!.recoveryPoint : "started",
        recoveryData: decision === Decision.Takeover ? row!.recoveryData : null,
      };
      // A take that finds the row changed since it was read (store.rowChanged) aborted the transaction: look again.
      const value = await work(t, owned).catch((error: unknown) => {
        if (store.rowChanged(error)) return undefined;
        throw error;
      });
      return value === undefined ? undefined : { kind: "owned", value };
    });
    if (step?.kind === "owned" || step?.kind === "replay") return step;
    if (step?.kind === "wait") {
      // Outside the lock: the holder's own statements (renewal, phases) take no advisory lock, but a fresh claim would wait behind us.
      const settled = await waitForHolder(sql, a);
      if (settled && decide(settled, a.fingerprint) === Decision.Replay) {
        reportWait(a);
        return { kind: "replay", row: settled };
      }
    }
  }
}
