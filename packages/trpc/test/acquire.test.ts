/**
 * The acquisition step on its own (src/acquire.ts): every row of the
 * decision table (README), each from the key row an earlier attempt would
 * have left; a stored answer (a replay, a mismatch) needs no lock; and the
 * downstream key does not depend on the session's TimeZone.
 */
import { createHash } from "node:crypto";
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { acquire, Decision, lockId, type Attempt } from "../src/acquire.js";
import { fingerprint, setLocalLimits } from "../src/index.js";
import { downstreamCallsOf, fresh, keyRow, openDatabase, post, serve, type Served } from "./harness.js";
import { trpcError } from "./waiting.js";

let sql: Sql;
let app: Served;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql);
});
afterAll(async () => {
  await app?.close();
  await sql?.end({ timeout: 5 });
});

const TENANT = "t1";
const PROCEDURE = "t.direct";
/** Where the acquisition takes its connections, as the runtime hands it. */
const pool = () => ({ sql, reserve: () => sql.reserve() });

const LIMITS = { lockTimeoutMs: 10_000, idleInTransactionTimeoutMs: 30_000 };

function attemptFor(key: string, input: unknown, waitMs = 0): Attempt {
  const fp = fingerprint(PROCEDURE, input);
  return {
    tenantId: TENANT,
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
  await sql`
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
      const a = attemptFor(fresh("table"), { n: 1 });
      if (c.seed) await seed(a, c.seed);
      const work = async () => ({ held: true });
      if (c.decision === Decision.Mismatch || c.decision === Decision.Wait) {
        const error = await trpcError(acquire(pool(), a, work));
        expect(error.code).toBe(c.decision === Decision.Mismatch ? "UNPROCESSABLE_CONTENT" : "CONFLICT");
        // The refusal leaves the row as it was.
        expect((await keyRow(sql, a.key))?.fence).toBe("4");
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
      expect((await keyRow(sql, a.key))?.fence).toBe(c.seed ? "4" : undefined);
    },
  );
});

describe("a stored answer needs no lock", () => {
  // The row is read in the statement that tries the lock; a completed row
  // and a fingerprint never change, so while another transaction holds the
  // key's lock (a concurrent replay's, an operator's) neither waits for it.
  it("a replay and a mismatch answer at once while another transaction holds the key's lock", async () => {
    const a = attemptFor(fresh("nolock"), { n: 1 }, 5_000);
    await seed(a, { state: "completed", sameRequest: true, leaseMs: null, expired: false });
    const events: string[] = [];
    const report = (type: string) => void events.push(type);
    const holder = await sql.reserve();
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

describe("the downstream key", () => {
  it("comes from the claim's time as epoch microseconds, the same in every session TimeZone", async () => {
    const key = fresh("downstream");
    expect((await post(app.base, "pay", key, { tag: key, amount: 4 })).status).toBe(200);
    const [sent] = await downstreamCallsOf(sql, key);
    const conn = await sql.reserve();
    try {
      const inZone = async (zone: string) => {
        await conn`begin`;
        await conn`select set_config('TimeZone', ${zone}, true)`;
        const [row] = await conn<{ micros: string; text: string }[]>`
          select (extract(epoch from created_at) * 1000000)::bigint::text as micros, created_at::text as text
          from idempotency_keys where tenant_id = ${TENANT} and key = ${key}`;
        await conn`rollback`;
        return row!;
      };
      const [utc, kathmandu] = [await inZone("UTC"), await inZone("Asia/Kathmandu")];
      // A derivation from created_at::text would read differently per zone; the stored instant does not.
      expect(kathmandu.text).not.toBe(utc.text);
      expect(kathmandu.micros).toBe(utc.micros);
      const expected = createHash("sha256").update(`${TENANT}\0${key}\0${kathmandu.micros}`).digest("hex").slice(0, 48);
      expect(sent).toBe(expected);
    } finally {
      conn.release();
    }
  });
});
