/**
 * Where a key's payment stands on the admin's key page, with the real
 * provider stand-in: recorded outcomes as recorded, and a pending payment
 * looked up at the provider by its downstream key — charged but not
 * recorded (the worker killed right after the charge), declined, never
 * charged, and an honest "provider unreachable" when it cannot be asked.
 */
import { inject, describe, expect, it, vi } from "vitest";
import { database } from "../../db/client";
import { downstreamKeyOf, generation } from "@exactly-once/trpc";
import { app, type App } from "../../server/app";
import { newKey, newTenant, type Tenant } from "../support/api";
import { abandonedPayment, chargesFor, killOnceCharged, pay, payChild, paymentsForKey, withProviderDown } from "../payments/support";
import { adminCaller } from "./support";

vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return { ...actual, env: { ...actual.env, ADMIN_PASSWORD: "test-admin-password" } };
});

async function standings(tenant: Tenant, key: string, via?: App) {
  const { payments } = await (await adminCaller(via)).admin.keys.get({ tenantId: tenant.id, key });
  return payments.map((p) => ({ id: p.id, standing: p.standing.standing, label: p.standing.label }));
}

/** The downstream key the app sent (or would send) the provider for this key. */
async function downstreamKey(tenantId: string, key: string): Promise<string> {
  const { sql } = database();
  const [row] = await sql<
    { generation: string }[]
  >`select ${generation(sql, "k")} as generation from idempotency_keys k where tenant_id = ${tenantId} and key = ${key}`;
  return downstreamKeyOf({ tenantId, key }, row!.generation);
}

describe("admin.keys.get: where a payment stands", () => {
  it("shows recorded outcomes as recorded: charged, declined", async () => {
    const tenant = await newTenant("standing-recorded");
    const charged = newKey("charged");
    expect((await pay(tenant, charged, { destination: "acct_test_123" })).status).toBe(201);
    expect(await standings(tenant, charged)).toEqual([expect.objectContaining({ standing: "charged", label: "charged" })]);

    const declined = newKey("declined");
    expect((await pay(tenant, declined, { destination: "acct_test_decline" })).status).toBe(402);
    expect(await standings(tenant, declined)).toEqual([expect.objectContaining({ standing: "declined", label: "declined" })]);
  });

  it("a worker killed right after the provider charged: charged at the provider, not recorded yet; then the completer records that one charge", async () => {
    const tenant = await newTenant("standing-crash");
    const key = newKey("crash");
    const holder = payChild(tenant, key, "31.00", "acct_test_slow");
    const paymentId = await killOnceCharged(holder, tenant.id, key);

    // The slow provider answers the dead worker's call a moment later; until then it is still working on it.
    await expect.poll(async () => (await standings(tenant, key))[0]?.standing, { timeout: 10_000 }).toBe("charged_unrecorded");
    expect(await standings(tenant, key)).toEqual([
      { id: paymentId, standing: "charged_unrecorded", label: "charged at the provider, not recorded yet" },
    ]);
    expect(await paymentsForKey(tenant.id, key)).toEqual([expect.objectContaining({ status: "pending", psp_charge_id: null })]);

    await expect
      .poll(async () => (await app.completer.completeDueKeys({ tenantId: tenant.id })).map((o) => o.outcome), { timeout: 10_000 })
      .toContain("completed");
    expect(await standings(tenant, key)).toEqual([expect.objectContaining({ id: paymentId, standing: "charged" })]);
    expect(await chargesFor(paymentId)).toHaveLength(1);
  });

  it("a pending payment the provider never saw: not charged", async () => {
    const tenant = await newTenant("standing-never");
    const key = newKey("never");
    const pending = await abandonedPayment(tenant, key, { amount: "9.00", destination: "acct_test_123" });
    expect(await standings(tenant, key)).toEqual([{ id: pending.id, standing: "not_charged", label: "not charged" }]);
    expect(await chargesFor(pending.id)).toHaveLength(0);
  });

  it("a pending payment the provider declined before the worker recorded it: declined", async () => {
    const tenant = await newTenant("standing-declined");
    const key = newKey("declined-unrecorded");
    const pending = await abandonedPayment(tenant, key, { amount: "9.00", destination: "acct_test_123" });
    // The decline reached the provider under the payment's own downstream key; the worker died before recording it.
    const declined = await fetch(`${inject("pspUrl")}/charges`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": await downstreamKey(tenant.id, key) },
      body: JSON.stringify({ amount: 900, currency: "EUR", destination: "acct_test_decline", capture: true, reference: pending.id }),
    });
    expect(declined.status).toBe(402);
    expect(await standings(tenant, key)).toEqual([{ id: pending.id, standing: "declined", label: "declined" }]);
  });

  it("says the provider is unreachable instead of guessing", async () => {
    const tenant = await newTenant("standing-down");
    const key = newKey("down");
    const pending = await abandonedPayment(tenant, key, { amount: "9.00", destination: "acct_test_123" });
    expect(await withProviderDown((down) => standings(tenant, key, down))).toEqual([
      { id: pending.id, standing: "provider_unreachable", label: "provider unreachable" },
    ]);
  });
});
