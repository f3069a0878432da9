/**
 * The dashboard's health strip reads the counters `/api/metrics` exports:
 * what it shows grew by exactly what happened, under the same names.
 */
import { describe, expect, it, vi } from "vitest";
import { database } from "../../db/client";
import { between, healthStrip, startHealthWindow } from "../../server/observability/health";
import { api, newKey, newTenant, trpcError } from "../support/api";
import { adminCaller, callerWith } from "../admin/support";
import { PAYMENT } from "../payments/support";

vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return { ...actual, env: { ...actual.env, ADMIN_PASSWORD: "test-admin-password" } };
});

const totals = (over: Partial<Parameters<typeof between>[0]["totals"]> = {}) => ({
  requests: 0,
  replayed: 0,
  conflicts: 0,
  mismatches: 0,
  failed: 0,
  completerRuns: 0,
  completerFailures: 0,
  providerCalls: 0,
  providerFailures: 0,
  ...over,
});

describe("the health strip", () => {
  it("rates per second over the window, never below zero, a short window counted as one second", () => {
    const from = { at: 0, totals: totals({ requests: 10, replayed: 4 }) };
    expect(between(from, { at: 300_000, totals: totals({ requests: 310, replayed: 64 }) }).rates).toMatchObject({
      requests: 1,
      replayed: 0.2,
    });
    expect(between(from, { at: 200, totals: totals({ requests: 13 }) })).toMatchObject({
      increase: { requests: 3, replayed: 0 },
      rates: { requests: 3, replayed: 0 },
    });
  });

  it("counts a payment, two replays and a mismatch as the metrics do, and the keys the alerts watch", async () => {
    startHealthWindow();
    const before = await healthStrip(database());
    const tenant = await newTenant("health");
    const key = newKey("health");
    expect((await api(tenant).post("/v1/payments", PAYMENT, key)).status).toBe(201);
    // Two replays, so a replay counted as an execution (or the other way round) shows.
    expect((await api(tenant).post("/v1/payments", PAYMENT, key)).status).toBe(201);
    expect((await api(tenant).post("/v1/payments", PAYMENT, key)).status).toBe(201);
    expect((await api(tenant).post("/v1/payments", { ...PAYMENT, amount: "26.00" }, key)).status).toBe(422);
    const after = await healthStrip(database());
    const grew = (k: keyof typeof after.increase) => after.increase[k] - before.increase[k];
    expect({
      requests: grew("requests"),
      replayed: grew("replayed"),
      mismatches: grew("mismatches"),
      conflicts: grew("conflicts"),
      failed: grew("failed"),
    }).toEqual({
      requests: 4,
      replayed: 2,
      mismatches: 1,
      conflicts: 0,
      failed: 0,
    });
    expect(grew("providerCalls")).toBe(1);
    expect(after.databaseUp).toBe(true);
    expect(after.keys).toEqual({ inProgress: expect.any(Number), stale: expect.any(Number), needsAttention: expect.any(Number) });
  });

  it("is served to a signed-in operator (admin.health), and to nobody else", async () => {
    const strip = await (await adminCaller()).admin.health();
    expect(strip.databaseUp).toBe(true);
    expect(strip.windowSeconds).toBeGreaterThanOrEqual(0);
    const refused = await trpcError((await callerWith()).admin.health());
    expect(refused.code).toBe("UNAUTHORIZED");
  });
});
