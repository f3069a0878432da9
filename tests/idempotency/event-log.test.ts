/**
 * What the app's event log (server/keys/events.ts) keeps of the events the
 * middleware reports: the ones the key row cannot tell, in time order, and
 * replays counted per key and minute into one row and the key's replay count.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { app } from "../../server/app";
import { ensureEffectsTable, keyRow, newTenant, post, uniqueKey, type TestTenant } from "./fixture";

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("event-log");
});

describe("idempotency_events", () => {
  it("records replays, mismatches, releases and takeovers for the dashboard", async () => {
    const key = uniqueKey("events");
    await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key);
    await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key);
    await post(tenant, "/t/atomic", { tag: key, amount: 2 }, key);
    const boom = uniqueKey("events-boom");
    await post(tenant, "/t/atomic", { tag: boom, amount: 1, outcome: "boom" }, boom);
    await post(tenant, "/t/atomic", { tag: boom, amount: 1, outcome: "boom" }, boom);
    await app.eventLog.flush();
    const types = async (k: string) =>
      (
        await database().sql<
          { type: string }[]
        >`select type from idempotency_events where tenant_id = ${tenant.id} and key = ${k} order by at, id`
      ).map((r) => r.type);
    // Claimed and completed live on the key row itself; the events table keeps the rest. In time order, as the
    // dashboard reads them: replay counts and the other events reach the table by separate timers, so ids do not tell.
    expect(await types(key)).toEqual(["replayed", "mismatch"]);
    expect(await types(boom)).toEqual(["released", "takeover", "released"]);
  });

  it("counts a key's replays per minute: one row with how many, added to the key's replay count", async () => {
    const key = uniqueKey("replays");
    await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key);
    // Not across a minute boundary, so the four replays share one row.
    const second = new Date().getUTCSeconds();
    if (second > 55) await new Promise((r) => setTimeout(r, (61 - second) * 1000));
    for (let i = 0; i < 4; i++) await post(tenant, "/t/atomic", { tag: key, amount: 1 }, key);
    await post(tenant, "/t/atomic", { tag: key, amount: 2 }, key);
    await app.eventLog.flush();
    const rows = await database().sql<{ type: string; count: number | null }[]>`
      select type, count from idempotency_events where tenant_id = ${tenant.id} and key = ${key} order by at, id`;
    expect(rows).toEqual([
      { type: "replayed", count: 4 },
      { type: "mismatch", count: null },
    ]);
    expect((await keyRow(tenant.id, key))!.replay_count).toBe(4);
  });
});
