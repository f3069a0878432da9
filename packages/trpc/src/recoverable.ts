/**
 * The recoverable flavour, after brandur's atomic phases: for handlers that
 * call out (a payment provider), where one transaction cannot span the call.
 *
 * 1. The claim commits (in progress, under a lease and a fence): for a fresh
 *    key one pipelined round trip, a look and an INSERT … ON CONFLICT DO
 *    NOTHING (`claimFresh`; the INSERT alone on a client's first send of the
 *    key); otherwise the acquisition (acquire.ts).
 * 2. Each `phase(name, fn)` runs in its own transaction that first locks the
 *    key row under this holder's fence, then commits its writes with the
 *    recovery point `name` and its JSON result. An attempt that took the key
 *    over skips the phases already committed and resumes after the last one.
 * 3. The holder renews its lease while it works; once it lost the key (its
 *    fence is stale) it can write no phase and cannot complete.
 * 4. The result is stored (completed or failed) under the fence, or the key
 *    is released for the next retry (the result policy, policy.ts).
 */
import { createHash } from "node:crypto";
import type { Sql } from "postgres";
import { acquire, admitNewKey, announce, decide, Decision, refuse, type Acquired, type Attempt } from "./acquire.js";
import type { Executed } from "./atomic.js";
import { IdempotencyKeyMismatchError, IdempotencyLeaseLostError } from "./errors.js";
import { IdempotencyEventType as E } from "./events.js";
import { finalResponseOf } from "./policy.js";
import { KeyState } from "./states.js";
import * as store from "./store.js";
import { inTransaction, type Pool } from "./transaction.js";
import type { HandlerResult, IdempotencyRuntime, KeyTake, RecoverableHandle } from "./types.js";

/** The key the provider dedupes on: tenant, key and the key's generation (a reused expired key is a new operation). */
export const downstreamKeyOf = (k: store.KeyRef, generation: string) =>
  createHash("sha256").update(`${k.tenantId}\0${k.key}\0${generation}`).digest("hex").slice(0, 48);

/**
 * Renews the lease every `everyMs` until stopped, for `a.maxHoldMs` at most;
 * reports a renewal that finds the key gone to someone else. A holder past
 * its budget stops renewing and counts as having lost the key: its lease runs
 * out, a retry takes over under a new fence, and whatever the old holder
 * still tries is refused by that fence.
 *
 * The loss is a plain value and one callback (`race`); the AbortSignal a
 * handler may hand to its own calls is made the first time it is read: an
 * EventTarget per request is most of what a lease costs, and most handlers
 * never read it.
 */
function holdLease(sql: Sql, a: Attempt, fence: number, everyMs: number) {
  let lostWith: IdempotencyLeaseLostError | undefined;
  let controller: AbortController | undefined;
  let onLost: ((error: Error) => void) | undefined;
  let stopped = false;
  const lose = () => {
    if (lostWith) return lostWith;
    a.event(E.LeaseLost, { fence });
    lostWith = new IdempotencyLeaseLostError(a.key, fence);
    controller?.abort(lostWith);
    onLost?.(lostWith);
    return lostWith;
  };
  const giveUpAt = Date.now() + a.maxHoldMs;
  const timer =
    everyMs > 0
      ? setInterval(() => {
          if (Date.now() >= giveUpAt) {
            clearInterval(timer);
            return void lose();
          }
          store.renew(sql, a, fence, a.leaseMs).then(
            // A renewal still in flight when the holder completes finds no in-progress row: that is not a lost lease.
            (rows) => rows.length === 0 && !stopped && lose(),
            () => undefined,
          );
        }, everyMs)
      : undefined;
  return {
    /** The refusal, once the key is lost. */
    get lost() {
      return lostWith;
    },
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (lostWith) controller.abort(lostWith);
      }
      return controller.signal;
    },
    lose,
    /**
     * The handler's result, or the loss as soon as it happens: a holder that
     * lost its key (a newer attempt took it, or its budget ran out) answers at
     * once, whatever its handler still waits for — a call that never settles
     * (a connection the driver never reports closed) must not hang the
     * request. What the handler still tries afterwards is fenced out, and its
     * result, whenever it comes, goes nowhere.
     */
    race<T>(work: Promise<T>): Promise<T> {
      if (lostWith) return Promise.reject(lostWith);
      return new Promise<T>((resolve, reject) => {
        onLost = reject;
        work.then(resolve, reject);
      });
    },
    /** Stops renewing before the key is completed or released. */
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}

/** The claim a recoverable holder commits before it calls out: in progress, under its lease. */
const claimRow = (a: Attempt): store.Put => ({ state: KeyState.InProgress, leaseMs: a.leaseMs, status: null, body: null });

/**
 * A fresh key's claim, the common case, in one round trip on one connection
 * and no transaction: a look at the row (`store.peek`) and the claim's
 * INSERT … ON CONFLICT DO NOTHING, pipelined. The primary key lets one
 * attempt in; a row that answers at once is answered (a replay, a
 * mismatch); anything else (a takeover, an expired key, a live holder, a
 * claim that lost to another) is undefined: the locking way decides. A
 * client's first send of the key (`Idempotency-Attempt: 1`) has nothing to
 * find and sends the INSERT alone, through the pool (no connection of its
 * own); said wrongly, its claim finds the row and the locking way reads
 * it, so a wrong `1` costs a statement, never a run.
 * With the app's say on new keys (`admitNewKey`) the look goes first and
 * the claim follows only when it found no row, one round trip more for a
 * send that is not a first: a key the tenant holds is answered without
 * asking, and the app is asked only for a claim that would insert.
 */
async function claimFresh(pool: Pool, a: Attempt): Promise<Acquired<Taken> | undefined> {
  const asks = a.admitNewKey !== undefined;
  // The INSERT alone needs no connection of its own: only statements that must follow each other share one.
  if (a.firstSend && !asks) return claimedBy(a, await store.claimIfAbsent(pool.sql, a, claimRow(a)));
  const conn = await pool.reserve();
  try {
    if (asks) {
      const row = (a.firstSend ? undefined : store.peeked(await store.peek(conn, a))) ?? (await admitNewKey(conn, a, !a.firstSend));
      if (row) return answered(a, row);
      return claimedBy(a, await store.claimIfAbsent(conn, a, claimRow(a)));
    }
    const [seen, claimed] = await Promise.all([store.peek(conn, a), store.claimIfAbsent(conn, a, claimRow(a))]);
    const claim = claimedBy(a, claimed);
    if (claim) return claim;
    const row = store.peeked(seen);
    return row && answered(a, row);
  } finally {
    conn.release();
  }
}

/** A claim and how the attempt took its key. */
type Taken = store.Claim & { how: KeyTake };

/** The claim's INSERT took the key, or (undefined) a row was there. */
function claimedBy(a: Attempt, rows: Awaited<ReturnType<typeof store.claimIfAbsent>>): Acquired<Taken> | undefined {
  const claim = store.claimed(rows);
  if (!claim) return undefined;
  const taken = { ...claim, seenFence: 0, how: Decision.Claim };
  announce(a, taken);
  return { kind: "owned", value: taken };
}

/** What a row found before any lock answers at once (a replay, a mismatch); undefined: the locking way decides. */
function answered(a: Attempt, row: store.Decidable): Acquired<Taken> | undefined {
  const decision = decide(row, a.fingerprint);
  if (decision === Decision.Replay) return { kind: "replay", row };
  if (decision === Decision.Mismatch) refuse(a, new IdempotencyKeyMismatchError(a.key, row.procedure));
  return undefined;
}

export async function runRecoverable<TTx, R extends HandlerResult>(
  runtime: IdempotencyRuntime<TTx>,
  a: Attempt,
  successStatus: number,
  run: (handle: RecoverableHandle<TTx>) => Promise<R>,
) {
  const sql = runtime.sql();
  const pool = { sql, reserve: runtime.reserve };
  const taken =
    (await claimFresh(pool, a)) ??
    (await acquire(pool, a, async (t, owned) => {
      const [rows] = await t.commit(store.put(t.conn, a, owned.seenFence, claimRow(a)));
      const claim = store.claimed(rows);
      if (claim) announce(a, owned);
      return claim && { ...claim, how: owned.how };
    }));
  if (taken.kind === "replay") return taken;
  const { fence, generation, recoveryData, how } = taken.value;

  const lease = holdLease(sql, a, fence, runtime.renewEveryMs ? runtime.renewEveryMs(a.leaseMs) : Math.floor(a.leaseMs / 3));
  const done: Record<string, unknown> = { ...(recoveryData ?? {}) };
  /** What `finish` stored, and the value it was made of: the key is completed, nothing runs after it. */
  let finished: { final: store.FinalResponse; value: unknown } | undefined;
  const lost = () => lease.lose();

  /** Whether `name` runs at all: a phase an earlier attempt committed is skipped, and nothing runs after `finish`. */
  const skipped = (name: string): { value: never } | undefined => {
    if (finished) throw new Error(`phase "${name}" after finish: finish's value is the answer, and nothing runs after it`);
    if (lease.lost) throw lease.lost;
    if (!(name in done)) return undefined;
    a.event(E.PhaseSkipped, { fence, recoveryPoint: name });
    return { value: done[name] as never };
  };

  let downstreamKey: string | undefined;
  const handle: RecoverableHandle<TTx> = {
    key: a.key,
    // A hash: made only for a handler that reads it.
    get downstreamKey() {
      return (downstreamKey ??= downstreamKeyOf(a, generation));
    },
    recoveryPoint: taken.value.recoveryPoint,
    get signal() {
      return lease.signal;
    },
    phase: async (name, fn) => {
      const skip = skipped(name);
      if (skip) return skip.value;
      const value = await inTransaction(runtime.reserve, async (t) => {
        // The fence's row lock goes out with the phase's first statement, which runs behind it; what it found is
        // checked before the phase counts for anything: a holder that lost the key commits nothing of it.
        const owned = t.beginAheadWith(a.setup, store.lockOwned(t.conn, a, fence));
        const stillOwned = async () => {
          const [mine] = await owned;
          if (mine.length === 0) throw lost();
        };
        const value = await fn(runtime.transaction(t.conn)).catch(async (error: unknown) => {
          await stillOwned();
          throw error;
        });
        await stillOwned();
        done[name] = value ?? null;
        await t.commit(store.savePoint(t.conn, a, fence, name, done, a.leaseMs));
        handle.recoveryPoint = name;
        return value;
      });
      a.event(E.PhaseCommitted, { fence, recoveryPoint: name });
      return value;
    },
    finish: async (name, fn) => {
      const skip = skipped(name);
      if (skip) return skip.value;
      const value = await inTransaction(runtime.reserve, async (t) => {
        // No lock ahead (the floor takes none): the completion is the key row's one write, and it fails under a
        // stale fence, so COMMIT ends the transaction, the handler's writes included, without them.
        t.beginAhead(a.setup);
        const value = await fn(runtime.transaction(t.conn));
        const final = finalResponseOf(runtime, successStatus, { ok: true, data: value })!;
        // A renewal still in flight must not count the completed key as lost.
        lease.stop();
        await t.commit(store.complete(t.conn, a, fence, final, { point: name })).catch((error: unknown) => {
          throw store.rowChanged(error) ? lost() : error;
        });
        finished = { final, value };
        handle.recoveryPoint = name;
        return value;
      });
      a.event(E.PhaseCommitted, { fence, recoveryPoint: name });
      return value;
    },
  };

  let result: R;
  try {
    result = await lease.race(run(handle));
  } catch (error) {
    if (lease.lost) refuse(a, new IdempotencyLeaseLostError(a.key, fence));
    throw error;
  } finally {
    lease.stop();
  }
  // Whatever the handler made of it, an attempt that lost its key must say so.
  if (lease.lost) refuse(a, new IdempotencyLeaseLostError(a.key, fence));
  if (finished) {
    // Every replay gives the stored answer, so the first must be it too: answering anything else is a handler bug.
    const { final, value } = finished;
    if (!result.ok || (result.data !== value && JSON.stringify(result.data) !== final.body)) {
      throw new Error(`"${a.procedure}" did not answer with the value its finish stored: return what finish returns`);
    }
    return { kind: "owned" as const, value: stored(a, fence, how, result, final) };
  }
  const final = finalResponseOf(runtime, successStatus, result);
  if (!final) {
    await store.release(sql, a, fence);
    a.event(E.Released, { fence, recoveryPoint: handle.recoveryPoint });
    return { kind: "owned" as const, value: { result, taken: how } satisfies Executed<R> };
  }
  const completed = await store.complete(sql, a, fence, final).catch(async (error: unknown) => {
    // The database failed us mid-completion: let the next retry take over at once instead of waiting out the lease.
    await store.release(sql, a, fence).catch(() => undefined);
    throw error;
  });
  if (completed.length === 0) {
    lease.lose();
    refuse(a, new IdempotencyLeaseLostError(a.key, fence));
  }
  return { kind: "owned" as const, value: stored(a, fence, how, result, final) };
}

function stored<R extends HandlerResult>(a: Attempt, fence: number, taken: KeyTake, result: R, final: store.FinalResponse): Executed<R> {
  a.event(E.Completed, { fence, status: final.status });
  return { result, taken, stored: { status: final.status, body: final.body } };
}
