/**
 * The atomic flavour: the handler's writes and the key row commit in ONE
 * transaction, and the key row is written once, at the end.
 *
 * 1. One round trip: BEGIN, one statement with the key's advisory lock (a
 *    duplicate waits here, at most `waitMs`) and the key row's lookup, and a
 *    SAVEPOINT.
 * 2. The handler writes through `ctx.idempotency.tx`.
 * 3. One round trip: the key row (completed, failed, or released) and COMMIT.
 *
 * A duplicate that waited on the lock then finds the committed row and
 * replays it. A crash rolls back the handler's writes and leaves no row. A
 * final error rolls back to the savepoint (the lock stays) and stores the
 * refusal; an unexpected error stores a released row instead, so the
 * fingerprint stays pinned and the next retry takes the key over at once.
 */
import { acquire, announce, type Attempt } from "./acquire.js";
import { IdempotencyEventType as E } from "./events.js";
import { outcomeOf } from "./policy.js";
import { KeyState } from "./states.js";
import * as store from "./store.js";
import type { AtomicHandle, HandlerResult, IdempotencyRuntime, StoredResponse } from "./types.js";

const WORK = "eo_work";

export type Settled<R> = { result: R; stored?: StoredResponse };

export function runAtomic<TTx, R extends HandlerResult>(
  runtime: IdempotencyRuntime<TTx>,
  a: Attempt,
  successStatus: number,
  run: (handle: AtomicHandle<TTx>) => Promise<R>,
) {
  return acquire(
    runtime.sql(),
    a,
    async (t, owned): Promise<Settled<R>> => {
      announce(a, owned);
      const result = await run({ key: a.key, tx: runtime.transaction(t.conn) });
      const outcome = outcomeOf(runtime, successStatus, result);
      if (!result.ok) await t.rollback(WORK);
      const row: store.Put = outcome
        ? { state: outcome.state, leaseMs: null, status: outcome.status, body: outcome.body }
        : { state: KeyState.InProgress, leaseMs: 0, status: null, body: null };
      await t.commit(store.settle(t.conn, a, owned.seenFence, row));
      if (outcome) a.event(E.Completed, { fence: owned.fence, status: outcome.status });
      else a.event(E.Released, { fence: owned.fence });
      return { result, stored: outcome && { status: outcome.status, body: outcome.body } };
    },
    { savepoint: WORK },
  );
}
