/**
 * The acquisition step on its own, against the real database: every row of
 * the decision table (README.md), then the advisory lock it takes: a
 * duplicate waits on it and replays, a wait over budget is a 409 with a
 * Retry-After taken from the holder's lease (REST and tRPC alike), the two
 * flavours exclude each other on one key, a row committed after the
 * acquisition read the key is not overwritten, a replay writes nothing, and the
 * downstream key does not depend on the session's TimeZone.
 */
import { createHash } from "node:crypto";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import type { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import { responseMeta } from "../../app/api/trpc/[trpc]/response-meta";
import { database } from "../../db/client";
import { createContextInner } from "../../server/app";
import { fingerprint, setLocalLimits } from "@exactly-once/trpc";
import { acquire, Decision, lockId, type Attempt } from "../../packages/trpc/src/acquire.js";
import { barrier, trpcError } from "../support/api";
import {
  caller,
  downstreamCalls,
  effectsFor,
  ensureEffectsTable,
  hooks,
  keyRow,
  newTenant,
  park,
  post,
  testRouter,
  uniqueKey,
  type TestTenant,
} from "./fixture";

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("acquire");
});

const PROCEDURE = "t.direct";
/** Where the acquisition takes its connections: the app's pool, as the middleware's runtime hands it. */
const pool = () => ({ sql: database().sql, reserve: database().reserve });

const LIMITS = { lockTimeoutMs: 10_000, idleInTransactionTimeoutMs: 30_000 };

function attemptFor(key: string, input: unknown, waitMs = 0): Attempt {
  const fp = fingerprint(PROCEDURE, input);
  return {
    tenantId: tenant.id,
    key,
    procedure: PROCEDURE,
    fingerprint: fp.hash,
    request: fp.request,
    ttlMs: 60_000,
    traceId: null,
    leaseMs: 30_000,
    maxHoldMs: 300_000,
    waitMs,
    firstSend: false,
    limits: LIMITS,
    setup: setLocalLimits(LIMITS),
    event: () => undefined,
  };
}

type Seed = { state: "in_progress" | "completed" | "failed"; sameRequest: boolean; leaseMs: number | null; expired: boolean };

/** Writes the key row a case starts from, as an earlier attempt would have left it. */
async function seed(a: Attempt, s: Seed) {
  const done = s.state !== "in_progress";
  const fp = s.sameRequest ? a.fingerprint : fingerprint(PROCEDURE, { other: true }).hash;
  await database().sql`
    insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, fence, locked_until,
                                  recovery_point, recovery_data, response_status, response_body, completed_at, expires_at)
    values (${a.tenantId}, ${a.key}, ${PROCEDURE}, ${fp}, ${a.request}, ${s.state}, 4,
            now() + ${s.leaseMs}::float8 * interval '1 millisecond',
            ${done ? "started" : "charged"}, ${done ? null : '{"charged":{"id":7}}'}::jsonb,
            ${done ? (s.state === "completed" ? 201 : 402) : null}, ${done ? '{"stored":true}' : null},
            ${done ? new Date().toISOString() : null}::timestamptz,
            now() + ${s.expired ? -1000 : 60_000} * interval '1 millisecond')`;
}

const live = 30_000;
const over = -1_000;

describe("the decision table, row by row", () => {
  it.each([
    { row: "none", seed: undefined, decision: Decision.Claim, seenFence: 0, recoveryPoint: "started" },
    {
      row: "completed, same request",
      seed: { state: "completed", sameRequest: true, leaseMs: null, expired: false },
      decision: Decision.Replay,
    },
    {
      row: "failed (final error), same request",
      seed: { state: "failed", sameRequest: true, leaseMs: null, expired: false },
      decision: Decision.Replay,
    },
    {
      row: "completed, other request",
      seed: { state: "completed", sameRequest: false, leaseMs: null, expired: false },
      decision: Decision.Mismatch,
    },
    {
      row: "in progress, other request",
      seed: { state: "in_progress", sameRequest: false, leaseMs: live, expired: false },
      decision: Decision.Mismatch,
    },
    {
      row: "in progress, lease alive",
      seed: { state: "in_progress", sameRequest: true, leaseMs: live, expired: false },
      decision: Decision.Wait,
    },
    {
      row: "in progress, lease over",
      seed: { state: "in_progress", sameRequest: true, leaseMs: over, expired: false },
      decision: Decision.Takeover,
      seenFence: 4,
      recoveryPoint: "charged",
    },
    {
      row: "released (no lease)",
      seed: { state: "in_progress", sameRequest: true, leaseMs: null, expired: false },
      decision: Decision.Takeover,
      seenFence: 4,
      recoveryPoint: "charged",
    },
    {
      row: "expired, any request",
      seed: { state: "completed", sameRequest: false, leaseMs: null, expired: true },
      decision: Decision.Replace,
      seenFence: 4,
      recoveryPoint: "started",
    },
  ] satisfies { row: string; seed: Seed | undefined; decision: Decision; seenFence?: number; recoveryPoint?: string }[])(
    "$row → $decision",
    async (c) => {
      const a = attemptFor(uniqueKey("table"), { n: 1 });
      if (c.seed) await seed(a, c.seed);
      const work = async () => ({ held: true });
      if (c.decision === Decision.Mismatch || c.decision === Decision.Wait) {
        const error = await trpcError(acquire(pool(), a, work));
        expect(error.code).toBe(c.decision === Decision.Mismatch ? "UNPROCESSABLE_CONTENT" : "CONFLICT");
        // The refusal leaves the row as it was.
        expect((await keyRow(a.tenantId, a.key))?.fence).toBe("4");
        return;
      }
      let owned: unknown;
      const acquired = await acquire(pool(), a, async (_t, o) => {
        owned = o;
        return work();
      });
      if (c.decision === Decision.Replay) {
        expect(acquired).toMatchObject({ kind: "replay", row: { responseBody: '{"stored":true}', state: c.seed!.state } });
        return;
      }
      expect(acquired).toEqual({ kind: "owned", value: { held: true } });
      expect(owned).toMatchObject({ how: c.decision, seenFence: c.seenFence, fence: c.seenFence! + 1, recoveryPoint: c.recoveryPoint });
      // Nothing was written: the work ended its transaction without a commit.
      expect((await keyRow(a.tenantId, a.key))?.fence).toBe(c.seed ? "4" : undefined);
    },
  );
});

/** Whether someone is waiting, right now, for a transaction-scoped advisory lock. */
async function until(condition: () => Promise<boolean>) {
  while (!(await condition())) await new Promise((r) => setTimeout(r, 10));
}

describe("one key, attempts at once", () => {
  it("a duplicate arriving while the first atomic attempt runs: the first to commit its key row wins, the other's work rolls back and it replays; one effect", async () => {
    for (let i = 0; i < 5; i++) {
      const key = uniqueKey("overtake");
      const hold = park(key, "after-write");
      const first = (await caller(tenant, key)).atomic({ tag: key, amount: 1 });
      await hold.entered;
      // The first has written its effect but not its key row (that comes with its COMMIT): the duplicate runs and commits.
      const second = await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key);
      expect(second.status).toBe(201);
      expect(second.headers.get("idempotent-replayed")).toBeNull();
      hold.release();
      // The first's INSERT meets the duplicate's row: its transaction, effect included, rolls back, and it replays.
      expect(await first).toEqual(JSON.parse(await second.text()));
      expect(await effectsFor(tenant.id, key)).toHaveLength(1);
      hooks.delete(key);
    }
  });

  it("two duplicates that both reach the key row's INSERT: one commits, the other waits at the unique index and replays it; its own work rolls back", async () => {
    for (let i = 0; i < 5; i++) {
      const key = uniqueKey("bothinsert");
      // Both attempts run their handler (the effect written) and stop just before the INSERT + COMMIT round trip.
      const ready = barrier(2);
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let arrived = 0;
      hooks.set(key, async (point) => {
        if (point !== "after-write") return;
        arrived += 1;
        await ready();
        await gate;
      });
      const [one, two] = [post(tenant, "/t/atomic", { tag: key, amount: 1 }, key), post(tenant, "/t/atomic", { tag: key, amount: 1 }, key)];
      // Each handler wrote its effect in its own open transaction: both ran, neither is committed.
      await until(async () => arrived === 2);
      release();
      // One INSERT commits; the other waits at the unique index for that transaction, then fails.
      const answers = await Promise.all([one, two]);
      expect(answers.map((r) => r.status)).toEqual([201, 201]);
      expect(answers.map((r) => r.headers.get("idempotent-replayed")).sort()).toEqual(["true", null].sort());
      const [x, y] = await Promise.all(answers.map((r) => r.text()));
      expect(x).toBe(y);
      // ...and nothing of it commits: one effect, one key row at fence 1.
      expect(await effectsFor(tenant.id, key)).toHaveLength(1);
      // The loser answered as a replay of the winner's row.
      expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "1", replay_count: 1 });
      hooks.delete(key);
    }
  });

  it("over the wait budget: 409 whose Retry-After is what the holder's lease still runs, over REST and over tRPC", async () => {
    const key = uniqueKey("retryafter");
    // The holder commits its claim (a 30 s lease) and stops between its phases.
    const hold = park(key, "between");
    const first = post(tenant, "/t/recoverable-no-wait", { tag: key, amount: 1 }, key);
    await hold.entered;
    const rest = await post(tenant, "/t/recoverable-no-wait", { tag: key, amount: 1 }, key);
    expect(rest.status).toBe(409);
    const seconds = Number(rest.headers.get("retry-after"));
    // Derived from the lease (30 s from the claim, a moment ago), never the fixed 1 s of old.
    expect(seconds).toBeGreaterThan(20);
    expect(seconds).toBeLessThanOrEqual(30);

    const trpc = await fetchRequestHandler({
      endpoint: "/api/trpc",
      req: new Request("http://test/api/trpc/recoverableNoWait", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ tag: key, amount: 1 }),
      }),
      router: testRouter,
      createContext: ({ req }) => createContextInner({ tenant, headers: req.headers }),
      responseMeta,
    });
    expect(trpc.status).toBe(409);
    expect(Number(trpc.headers.get("retry-after"))).toBeGreaterThan(20);
    expect(Number(trpc.headers.get("retry-after"))).toBeLessThanOrEqual(30);

    hold.release();
    expect((await first).status).toBe(201);
    expect(await effectsFor(tenant.id, key)).toHaveLength(2);
    hooks.delete(key);
  });

  it("the two flavours exclude each other on one key: a recoverable claim made while an atomic attempt runs wins, and the atomic attempt's work rolls back (422)", async () => {
    for (let i = 0; i < 5; i++) {
      const key = uniqueKey("cross");
      const hold = park(key, "after-write");
      const atomic = (await caller(tenant, key)).atomic({ tag: key, amount: 1 }).then(
        () => undefined,
        (error: TRPCError) => error,
      );
      await hold.entered;
      // The atomic attempt has no row yet (it writes one only with its COMMIT): the recoverable one claims the key and finishes.
      await (await caller(tenant, key)).recoverable({ tag: key, amount: 1 });
      hold.release();
      // Another procedure with the same key: a different request, so a mismatch; what the atomic attempt wrote is rolled back.
      expect((await atomic)?.code).toBe("UNPROCESSABLE_CONTENT");
      expect((await effectsFor(tenant.id, key)).map((e) => e.note).sort()).toEqual([`${key}:recorded`, `${key}:settled`]);
      expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "1" });
      hooks.delete(key);
    }
  });

  it("an atomic attempt meeting a running recoverable one refuses without running", async () => {
    const key = uniqueKey("cross2");
    const hold = park(key, "between");
    const recoverable = post(tenant, "/t/recoverable", { tag: key, amount: 1 }, key);
    await hold.entered;
    const atomic = await post(tenant, "/t/atomic-no-wait", { tag: key, amount: 1 }, key);
    expect(atomic.status).toBe(422);
    hold.release();
    expect((await recoverable).status).toBe(201);
    expect((await effectsFor(tenant.id, key)).map((e) => e.note)).toEqual([`${key}:recorded`, `${key}:settled`]);
    hooks.delete(key);
  });
});

describe("a stored answer needs no lock", () => {
  // The row is read in the statement that tries the lock; a completed row
  // and a fingerprint never change, so while another transaction holds the
  // key's lock (a concurrent replay's, an operator's) neither waits for it.
  it("a replay and a mismatch answer at once while another transaction holds the key's lock", async () => {
    const a = attemptFor(uniqueKey("nolock"), { n: 1 }, 5_000);
    await seed(a, { state: "completed", sameRequest: true, leaseMs: null, expired: false });
    const events: string[] = [];
    const report = (type: string) => void events.push(type);
    const holder = await database().sql.reserve();
    try {
      await holder`begin`;
      await holder`select pg_advisory_xact_lock(${lockId(a)}::int8)`;
      const started = performance.now();
      // The take's row answers, so its lock does not matter.
      const replay = await acquire(pool(), { ...a, event: report }, async () => "ran");
      expect(replay).toMatchObject({ kind: "replay", row: { responseBody: '{"stored":true}' } });
      const other = { ...attemptFor(a.key, { n: 2 }, 5_000), event: report };
      const mismatch = await trpcError(acquire(pool(), other, async () => "ran"));
      expect(mismatch.code).toBe("UNPROCESSABLE_CONTENT");
      expect(events).toEqual(["mismatch"]);
      expect(performance.now() - started).toBeLessThan(2_000);
    } finally {
      await holder`rollback`;
      holder.release();
    }
  });
});

describe("a key row the acquisition could not see yet", () => {
  // The acquisition reads the row in the statement that takes the lock, so a
  // holder committing in between is missed. Played here by committing the
  // row from another connection while the handler runs: the take must fail
  // on it, roll the handler's writes back and answer from that row.
  it("fails the take, rolls back the handler's writes and replays the row it missed", async () => {
    const key = uniqueKey("missed");
    const body = { tag: key, amount: 3 };
    const stored = JSON.stringify({ stored: "by the holder it missed" });
    hooks.set(key, async (point) => {
      if (point !== "after-write") return;
      await database().sql`
        insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, completed_at, expires_at)
        values (${tenant.id}, ${key}, 'atomic', ${fingerprint("atomic", { ...body, outcome: "ok" }).hash}, '', 'completed', 201, ${stored}, now(), now() + interval '1 minute')`;
    });
    try {
      const res = await post(tenant, "/t/atomic", body, key);
      expect(res.status).toBe(201);
      expect(res.headers.get("idempotent-replayed")).toBe("true");
      expect(await res.text()).toBe(stored);
      expect(await effectsFor(tenant.id, key)).toHaveLength(0);
      expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "1", response_body: stored });
    } finally {
      hooks.delete(key);
    }
  });
});

describe("a replay writes nothing", () => {
  it("replays answer while another transaction holds the key row locked; their count comes from the event writer", async () => {
    for (const path of ["/t/atomic", "/t/recoverable"]) {
      const key = uniqueKey("nowrite");
      const first = await post(tenant, path, { tag: key, amount: 3 }, key);
      expect(first.status).toBe(201);
      // Any write to the key row on the request path would now wait for this lock (and fail after lock_timeout).
      const blocker = await database().sql.reserve();
      try {
        await blocker`begin`;
        await blocker`select 1 from idempotency_keys where tenant_id = ${tenant.id} and key = ${key} for update`;
        for (let i = 0; i < 3; i++) {
          const replay = await post(tenant, path, { tag: key, amount: 3 }, key);
          expect(replay.headers.get("idempotent-replayed")).toBe("true");
          expect(await replay.text()).toBe(await first.clone().text());
        }
      } finally {
        await blocker`rollback`;
        blocker.release();
      }
      // The batched event writer adds them up (keyRow flushes it first).
      expect((await keyRow(tenant.id, key))!.replay_count).toBe(3);
    }
  });
});

describe("the downstream key", () => {
  it("comes from the claim's time as epoch microseconds, the same in every session TimeZone", async () => {
    const key = uniqueKey("downstream");
    expect((await post(tenant, "/t/recoverable", { tag: key, amount: 4 }, key)).status).toBe(201);
    const sent = downstreamCalls.find((c) => c.tag === key)!.downstreamKey;
    const conn = await database().sql.reserve();
    try {
      const inZone = async (zone: string) => {
        await conn`begin`;
        await conn`select set_config('TimeZone', ${zone}, true)`;
        const [row] = await conn<{ micros: string; text: string }[]>`
          select (extract(epoch from created_at) * 1000000)::bigint::text as micros, created_at::text as text
          from idempotency_keys where tenant_id = ${tenant.id} and key = ${key}`;
        await conn`rollback`;
        return row!;
      };
      const [utc, kathmandu] = [await inZone("UTC"), await inZone("Asia/Kathmandu")];
      // The old derivation (created_at::text) reads differently per zone; the stored instant does not.
      expect(kathmandu.text).not.toBe(utc.text);
      expect(kathmandu.micros).toBe(utc.micros);
      const expected = createHash("sha256").update(`${tenant.id}\0${key}\0${kathmandu.micros}`).digest("hex").slice(0, 48);
      expect(sent).toBe(expected);
    } finally {
      conn.release();
    }
  });
});
