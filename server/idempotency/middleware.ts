/**
 * The idempotency procedure middleware for tRPC 11.
 *
 * Two flavours, one state machine (README.md beside this file):
 * - `atomic`: claim, business writes and the stored result commit in ONE
 *   transaction. The claim is pipelined with BEGIN and the completion with
 *   COMMIT, so the wrapper adds statements but no round trips. A duplicate
 *   arriving meanwhile waits on the uncommitted key row (bounded by
 *   `lock_timeout`) and then replays; a crash rolls everything back.
 * - `recoverable`: for handlers that call out (a payment provider). The claim
 *   commits first; each phase commits its writes with its recovery point; a
 *   retry after a crash takes the key over once the lease ran out and resumes
 *   from the last recovery point. A fence counter stops the old holder.
 */
import { createHash } from "node:crypto";
import { experimental_standaloneMiddleware, TRPCError } from "@trpc/server";
import { middlewareMarker } from "@trpc/server/unstable-core-do-not-import";
import { fingerprint } from "./canonical";
import { IdempotencyError, IdempotencyKeyInProgressError, IdempotencyKeyMismatchError, IdempotencyLeaseLostError } from "./errors";
import { deleteExpired, type CleanupOptions } from "./cleanup";
import { decide, LOCK_NOT_AVAILABLE, type Attempt, sleep } from "./decide";
import { IdempotencyEventType as E } from "./events";
import { readIdempotencyKey } from "./key";
import { KeyState } from "./schema";
import * as store from "./store";
import type { AtomicHandle, IdempotencyRuntime, ProcedureOptions, RecoverableHandle, StoredResponse } from "./types";

export type { AtomicHandle, IdempotencyRuntime, ProcedureOptions, RecoverableHandle, StoredResponse } from "./types";

/** The two middleware flavours and expiry, wired to one runtime (database, scope, error policy, events). */
export function createIdempotency<TCtx extends object, TTx, TMeta extends object>(runtime: IdempotencyRuntime<TCtx, TTx, TMeta>) {
  const base = experimental_standaloneMiddleware<{ ctx: TCtx; meta: TMeta; input: unknown }>();

  function readKey(ctx: TCtx): string {
    try {
      return readIdempotencyKey(runtime.headers(ctx));
    } catch (error) {
      if (error instanceof IdempotencyError) throw new TRPCError({ code: error.code, message: error.message, cause: error });
      throw error;
    }
  }

  function prepare(ctx: TCtx, path: string, input: unknown, options: ProcedureOptions) {
    const key = readKey(ctx);
    const ref = { tenantId: runtime.scope(ctx), key };
    const fp = fingerprint(path, input);
    const o = { ...runtime.defaults, ...options };
    const claim: store.ClaimInput = { ...ref, procedure: path, fingerprint: fp.hash, request: fp.request, ttlMs: o.ttlMs, leaseMs: o.leaseMs };
    const event: Attempt["event"] = (type, extra) => runtime.onEvent?.({ type, tenantId: ref.tenantId, key, procedure: path, ...extra });
    return { c: { claim, ref, event } satisfies Attempt, o };
  }

  function replay(ctx: TCtx, c: Attempt, row: store.KeyRow) {
    const stored = { status: row.responseStatus!, body: row.responseBody! };
    c.event(E.Replayed, { status: stored.status, fence: row.fence });
    runtime.respond?.(ctx, { ...stored, replayed: true });
    if (row.state === KeyState.Completed) {
      return { ok: true as const, data: JSON.parse(stored.body) as unknown, marker: middlewareMarker, ctx };
    }
    return { ok: false as const, error: runtime.replayError(stored), marker: middlewareMarker };
  }

  function fail(c: Attempt, error: IdempotencyError): never {
    if (error instanceof IdempotencyKeyMismatchError) c.event(E.Mismatch);
    if (error instanceof IdempotencyKeyInProgressError) c.event(E.Conflict);
    throw new TRPCError({ code: error.code, message: error.message, cause: error });
  }

  /**
   * A duplicate of an attempt that holds a live lease: poll until it
   * finishes (replay), lets go (take over) or the wait budget is spent (409).
   */
  async function waitForHolder(c: Attempt, waitMs: number): Promise<store.KeyRow | undefined> {
    const deadline = Date.now() + waitMs;
    for (let pause = 20; ; pause = Math.min(pause * 2, 250)) {
      const row = store.loaded(await store.load(runtime.sql(), c.ref));
      if (!row || decide(row, c.claim.fingerprint) !== "wait") return row;
      if (Date.now() + pause > deadline) fail(c, new IdempotencyKeyInProgressError(c.ref.key, 1));
      await sleep(pause);
    }
  }

  function finish(ctx: TCtx, stored: StoredResponse) {
    runtime.respond?.(ctx, { ...stored, replayed: false });
  }

  function atomic(options: ProcedureOptions = {}) {
    return base.create(async (opts) => {
      const { meta, path, input, next } = opts;
      // tRPC re-derives the context type through mapped types a generic cannot follow.
      const ctx = opts.ctx as unknown as TCtx;
      const { c, o } = prepare(ctx, path, input, options);
      const conn = await runtime.sql().reserve();
      try {
        for (;;) {
          // Another wait budget than the connections' own lock_timeout is set for the claim alone.
          const wait = o.waitMs === runtime.sessionLockTimeoutMs ? "" : `; set local lock_timeout = ${Math.max(1, Math.floor(o.waitMs))}`;
          const [begun, first, marked] = await Promise.allSettled([
            conn.unsafe(`begin${wait}`),
            store.claimOrLoad(conn, c.claim),
            conn.unsafe(wait ? "set local lock_timeout to default; savepoint eo_work" : "savepoint eo_work"),
          ]);
          for (const step of [begun, first, marked]) {
            if (step.status === "rejected") {
              await conn.unsafe("rollback");
              if ((step.reason as { code?: string }).code === LOCK_NOT_AVAILABLE) {
                fail(c, new IdempotencyKeyInProgressError(c.ref.key, 1, { cause: step.reason }));
              }
              throw step.reason;
            }
          }
          const outcome = store.claimOutcome((first as PromiseFulfilledResult<store.ClaimOrLoadRows>).value);
          let owned = outcome && "claim" in outcome ? outcome.claim : undefined;
          if (owned) {
            c.event(E.Claimed, { fence: owned.fence });
          } else {
            // No row in the statement's snapshot: we waited for a claimer that has committed since.
            const row = outcome && "row" in outcome ? outcome.row : store.loaded(await store.load(conn, c.ref));
            const decision = row ? decide(row, c.claim.fingerprint) : "replace";
            if (row && decision === "replay") {
              await Promise.all([store.countReplay(conn, c.ref), conn.unsafe("commit")]);
              return replay(ctx, c, row);
            }
            if (decision === "replace") {
              owned = await store.replaceExpired(conn, c.claim);
              if (owned) c.event(E.Expired, { fence: owned.fence });
            } else if (decision === "takeover") {
              owned = await store.takeOver(conn, c.ref, row!.fence, o.leaseMs);
              if (owned) c.event(E.Takeover, { fence: owned.fence, recoveryPoint: owned.recoveryPoint });
            } else {
              await conn.unsafe("rollback");
              if (decision === "mismatch") fail(c, new IdempotencyKeyMismatchError(c.ref.key, row!.procedure));
              const settled = await waitForHolder(c, o.waitMs);
              if (settled && decide(settled, c.claim.fingerprint) === "replay") {
                await store.countReplay(runtime.sql(), c.ref);
                return replay(ctx, c, settled);
              }
              continue;
            }
            if (!owned) {
              // Someone else replaced or took it over first: look again.
              await conn.unsafe("rollback");
              continue;
            }
            // A failure must roll back to after the takeover, not undo it.
            await conn.unsafe("savepoint eo_work");
          }

          const result = await next({ ctx: { idempotency: { key: c.ref.key, tx: runtime.transaction(conn) } satisfies AtomicHandle<TTx> } });
          if (result.ok) {
            const stored = { status: runtime.successStatus(meta), body: JSON.stringify(result.data) };
            await Promise.all([store.complete(conn, c.ref, owned.fence, { state: KeyState.Completed, ...stored }), conn.unsafe("commit")]);
            c.event(E.Completed, { fence: owned.fence, status: stored.status });
            finish(ctx, stored);
            return result;
          }
          const final = runtime.finalError(result.error);
          await conn.unsafe("rollback to savepoint eo_work");
          if (final) {
            await Promise.all([store.complete(conn, c.ref, owned.fence, { state: KeyState.Failed, ...final }), conn.unsafe("commit")]);
            c.event(E.Completed, { fence: owned.fence, status: final.status });
            finish(ctx, final);
          } else {
            // The business writes are gone; the key stays, released, so the
            // fingerprint is pinned and the next retry runs the work again.
            await Promise.all([store.release(conn, c.ref, owned.fence), conn.unsafe("commit")]);
            c.event(E.Released, { fence: owned.fence });
          }
          return result;
        }
      } catch (error) {
        // A connection left inside a failed transaction must not go back to the pool as is.
        await conn.unsafe("rollback").catch(() => undefined);
        throw error;
      } finally {
        conn.release();
      }
    });
  }

  function recoverable(options: ProcedureOptions = {}) {
    return base.create(async (opts) => {
      const { meta, path, input, next } = opts;
      // tRPC re-derives the context type through mapped types a generic cannot follow.
      const ctx = opts.ctx as unknown as TCtx;
      const { c, o } = prepare(ctx, path, input, options);
      const sql = runtime.sql();
      let owned: store.Claim | undefined;
      while (!owned) {
        const first = store.claimOutcome(await store.claimOrLoad(sql, c.claim));
        if (first && "claim" in first) {
          owned = first.claim;
          c.event(E.Claimed, { fence: owned.fence });
          break;
        }
        let row = first && "row" in first ? first.row : store.loaded(await store.load(sql, c.ref));
        if (row && decide(row, c.claim.fingerprint) === "wait") row = await waitForHolder(c, o.waitMs);
        if (!row) continue;
        switch (decide(row, c.claim.fingerprint)) {
          case "replay":
            await store.countReplay(sql, c.ref);
            return replay(ctx, c, row);
          case "mismatch":
            fail(c, new IdempotencyKeyMismatchError(c.ref.key, row.procedure));
          // falls through never: fail() throws
          case "replace":
            owned = await store.replaceExpired(sql, c.claim);
            if (owned) c.event(E.Expired, { fence: owned.fence });
            break;
          case "takeover":
            owned = await store.takeOver(sql, c.ref, row.fence, o.leaseMs);
            if (owned) c.event(E.Takeover, { fence: owned.fence, recoveryPoint: owned.recoveryPoint });
            break;
          case "wait":
            break;
        }
      }

      const fence = owned.fence;
      const lost = new AbortController();
      const loseKey = () => {
        if (!lost.signal.aborted) {
          c.event(E.LeaseLost, { fence });
          lost.abort(new IdempotencyLeaseLostError(c.ref.key, fence));
        }
      };
      const every = runtime.renewEveryMs ? runtime.renewEveryMs(o.leaseMs) : Math.floor(o.leaseMs / 3);
      const timer =
        every > 0
          ? setInterval(() => {
              store
                .renew(sql, c.ref, fence, o.leaseMs)
                .then((rows) => rows.length === 0 && loseKey())
                .catch(() => undefined);
            }, every)
          : undefined;

      const data: Record<string, unknown> = { ...(owned.recoveryData ?? {}) };
      const handle: RecoverableHandle<TTx> = {
        key: c.ref.key,
        downstreamKey: createHash("sha256")
          .update(`${c.ref.tenantId}\0${c.ref.key}\0${owned.createdAt}`)
          .digest("hex")
          .slice(0, 48),
        recoveryPoint: owned.recoveryPoint,
        signal: lost.signal,
        async phase(name, fn) {
          if (lost.signal.aborted) throw lost.signal.reason;
          if (name in data) return data[name] as never;
          const conn = await sql.reserve();
          try {
            const [, mine] = await Promise.all([conn.unsafe("begin"), store.lockOwned(conn, c.ref, fence)]);
            if (mine.length === 0) {
              await conn.unsafe("rollback");
              loseKey();
              throw lost.signal.reason;
            }
            const value = await fn(runtime.transaction(conn));
            data[name] = value ?? null;
            await Promise.all([store.savePoint(conn, c.ref, fence, name, data, o.leaseMs), conn.unsafe("commit")]);
            handle.recoveryPoint = name;
            return value;
          } catch (error) {
            await conn.unsafe("rollback").catch(() => undefined);
            throw error;
          } finally {
            conn.release();
          }
        },
      };

      try {
        const result = await next({ ctx: { idempotency: handle } });
        // Whatever the handler made of it, an attempt that lost its key must say so.
        if (lost.signal.aborted) fail(c, new IdempotencyLeaseLostError(c.ref.key, fence));
        const outcome: store.Outcome | undefined = result.ok
          ? { state: KeyState.Completed, status: runtime.successStatus(meta), body: JSON.stringify(result.data) }
          : (() => {
              const final = runtime.finalError(result.error);
              return final && { state: KeyState.Failed, ...final };
            })();
        if (!outcome) {
          await store.release(sql, c.ref, fence);
          c.event(E.Released, { fence, recoveryPoint: handle.recoveryPoint });
          return result;
        }
        const done = await store.complete(sql, c.ref, fence, outcome);
        if (done.length === 0) {
          loseKey();
          fail(c, new IdempotencyLeaseLostError(c.ref.key, fence));
        }
        c.event(E.Completed, { fence, status: outcome.status });
        finish(ctx, outcome);
        return result;
      } catch (error) {
        // Our own failure (the database went away mid-completion, say): let
        // the next retry take over at once instead of waiting out the lease.
        if (!(error instanceof TRPCError && error.cause instanceof IdempotencyLeaseLostError)) {
          await store.release(sql, c.ref, fence).catch(() => undefined);
        }
        throw error;
      } finally {
        clearInterval(timer);
      }
    });
  }

  return { atomic, recoverable, deleteExpired: (options?: CleanupOptions) => deleteExpired(runtime.sql, runtime.onEvent, options) };
}
