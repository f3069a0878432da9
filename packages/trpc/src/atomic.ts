/**
 * The atomic flavour: the handler's writes and the key row commit in ONE
 * transaction, and the key row is written once, at the end.
 *
 * The common path is the floor's own statements. A fresh key that nobody
 * else is on costs:
 * 1. a look at the key row (`store.peek`, a primary-key probe that finds
 *    nothing), through the pool before any transaction, so that a stored
 *    answer is one statement and reserves and opens nothing; left out when
 *    the client says this is its first send of the key
 *    (`Idempotency-Attempt: 1`, key.ts), which then costs exactly the
 *    floor's statements;
 * 2. BEGIN (with those of the transaction's limits its connection does not
 *    carry from its start: none on a pool opened with `connectionLimits`),
 *    sent without waiting, so that it goes out with the handler's first
 *    statement through `ctx.idempotency.tx`:
 *    the look, where there is one, takes the round trip the floor spends on
 *    BEGIN alone (behind a transaction pooler, where postgres-js waits for
 *    BEGIN's answer before a statement it must describe first, BEGIN is a
 *    round trip of its own);
 * 3. one round trip: the completed key row's plain INSERT and COMMIT.
 * No lock, no savepoint, no read of the row back.
 *
 * Exactly once still holds without the lock, because the key row's primary
 * key decides: a concurrent duplicate runs its handler too, but its INSERT
 * waits at the unique index for the first attempt's transaction, then fails
 * (unique_violation) and takes the whole transaction, its handler's writes
 * included, down with it. Nothing of the loser commits.
 *
 * Everything else goes the locking way (`locked`, the acquisition of
 * acquire.ts with its advisory lock, savepoint and decision table): a key
 * whose row is there but answers nothing at once (a takeover, an expired
 * key, a holder with a live lease), and an attempt whose INSERT met another
 * attempt's row. A replay or a mismatch is decided on the peeked row at once.
 *
 * A handler that fails rolls back, then its row (a stored refusal, or a
 * released key that keeps the fingerprint pinned) is written in a statement
 * of its own, only if the key still has none; if another attempt's row is
 * there, the locking way decides instead (its stored answer is replayed).
 */
import { acquire, admitNewKey, announce, decide, Decision, noteWait, refuse, type Acquired, type Attempt } from "./acquire.js";
import { IdempotencyKeyInProgressError, IdempotencyKeyMismatchError } from "./errors.js";
import { IdempotencyEventType as E } from "./events.js";
import { finalResponseOf } from "./policy.js";
import { KeyState } from "./states.js";
import * as store from "./store.js";
import { isLockTimeout, KeyTransaction, setLocalLockTimeout } from "./transaction.js";
import type { AtomicHandle, HandlerResult, IdempotencyRuntime, KeyTake, StoredResponse } from "./types.js";

const WORK = "eo_work";

export type Executed<R> = { result: R; taken: KeyTake; stored?: StoredResponse };

/** What an attempt's result stores: its final response, or a released key (an unexpected error: a retry runs again). */
function rowOf(final: store.FinalResponse | undefined): store.Put {
  return final
    ? { state: final.state, leaseMs: null, status: final.status, body: final.body }
    : { state: KeyState.InProgress, leaseMs: 0, status: null, body: null };
}

/** Reports what the attempt stored under `fence`, once it committed. */
function reportSettled(a: Attempt, fence: number, final: store.FinalResponse | undefined): void {
  if (final) a.event(E.Completed, { fence, status: final.status });
  else a.event(E.Released, { fence });
}

export async function runAtomic<TTx, R extends HandlerResult>(
  runtime: IdempotencyRuntime<TTx>,
  a: Attempt,
  successStatus: number,
  run: (handle: AtomicHandle<TTx>) => Promise<R>,
): Promise<Acquired<Executed<R>>> {
  return (await unlocked(runtime, a, successStatus, run)) ?? locked(runtime, a, successStatus, run);
}

/** The common path; undefined hands the attempt to the locking way (its own transaction was rolled back). */
async function unlocked<TTx, R extends HandlerResult>(
  runtime: IdempotencyRuntime<TTx>,
  a: Attempt,
  successStatus: number,
  run: (handle: AtomicHandle<TTx>) => Promise<R>,
): Promise<Acquired<Executed<R>> | undefined> {
  // The look comes before the transaction, through the pool: a stored answer (the common retry) is then one
  // statement, no connection reserved and nothing opened. In BEGIN's write instead it would save a fresh key its own
  // write but cost a replay a ROLLBACK, as much as it saves, and a replay would no longer be one statement. A
  // client's first send of the key has nothing to find, so it goes without: then its statements are the floor's.
  const sql = runtime.sql();
  let row = a.firstSend ? undefined : store.peeked(await store.peek(sql, a));
  // Nothing to answer from: the handler's run would insert a new key row, which the app may refuse.
  row ??= await admitNewKey(sql, a, !a.firstSend);
  if (row) {
    const decision = decide(row, a.fingerprint);
    if (decision === Decision.Replay) return { kind: "replay", row };
    if (decision === Decision.Mismatch) refuse(a, new IdempotencyKeyMismatchError(a.key, row.procedure));
    return undefined;
  }
  const t = new KeyTransaction(await runtime.reserve());
  try {
    // BEGIN goes out with the handler's first statement: the look above, where there is one, is the round trip the
    // floor spends on BEGIN alone.
    t.beginAhead(a.setup);
    const result = await run({ key: a.key, tx: runtime.transaction(t.conn) });
    const final = finalResponseOf(runtime, successStatus, result);
    if (result.ok) {
      const sentAt = performance.now();
      try {
        // A duplicate's INSERT waits for the first attempt's commit; `waitMs` bounds that wait as it bounds the lock's.
        const bound = a.waitMs !== a.limits.lockTimeoutMs ? [t.conn.unsafe(setLocalLockTimeout(a.waitMs))] : [];
        await t.commit(...bound, store.settle(t.conn, a, 0, rowOf(final)));
      } catch (error) {
        if (store.rowChanged(error)) {
          // Another attempt's row was there, or committed while this INSERT waited at the unique index for it.
          noteWait(a, sentAt);
          return undefined;
        }
        if (isLockTimeout(error)) refuse(a, new IdempotencyKeyInProgressError(a.key, 1, { cause: error }));
        throw error;
      }
    } else {
      await t.rollback();
      if (!(await store.insertIfAbsent(t.conn, a, rowOf(final)))) return undefined;
    }
    a.event(E.Claimed, { fence: 1 });
    reportSettled(a, 1, final);
    return { kind: "owned", value: { result, taken: Decision.Claim, stored: final && { status: final.status, body: final.body } } };
  } finally {
    await t.close();
  }
}

/** The locking way: the key's advisory lock, the row read under it, and the decision table (acquire.ts). */
function locked<TTx, R extends HandlerResult>(
  runtime: IdempotencyRuntime<TTx>,
  a: Attempt,
  successStatus: number,
  run: (handle: AtomicHandle<TTx>) => Promise<R>,
) {
  return acquire(
    { sql: runtime.sql(), reserve: runtime.reserve },
    a,
    async (t, owned): Promise<Executed<R>> => {
      announce(a, owned);
      const result = await run({ key: a.key, tx: runtime.transaction(t.conn) });
      const final = finalResponseOf(runtime, successStatus, result);
      if (!result.ok) await t.rollback(WORK);
      await t.commit(store.settle(t.conn, a, owned.seenFence, rowOf(final)));
      reportSettled(a, owned.fence, final);
      return { result, taken: owned.how, stored: final && { status: final.status, body: final.body } };
    },
    { savepoint: WORK },
  );
}
