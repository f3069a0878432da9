/**
 * The completer on the dashboard: "Resume now" finishes a stale key at once
 * (and is audited), is refused while a lease runs or once a key is finished;
 * a key the completer gave up on shows as "needs attention", is counted and
 * filtered; the timeline shows the completer's attempts and the operator's
 * actions in time order, and the key says who completed it.
 */
import { TRPCError } from "@trpc/server";
import { describe, expect, it, vi } from "vitest";
import { database } from "../../db/client";
import { app } from "../../server/app";
import { newKey, newTenant } from "../support/api";
import { chargesFor, pay, paymentsForKey, withProviderDown } from "../payments/support";
import { adminCaller, seedKeys } from "./support";

vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return { ...actual, env: { ...actual.env, ADMIN_PASSWORD: "test-admin-password" } };
});

/** A payment whose client gave up after a 503 (provider unreachable): its key is stale at once. */
async function abandoned(label: string) {
  const tenant = await newTenant(label);
  const key = newKey(label);
  expect((await withProviderDown((down) => pay(tenant, key, { amount: "15.00" }, down))).status).toBe(503);
  return { tenant, key };
}

const codeOf = async (p: Promise<unknown>) => {
  const error = await p.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(TRPCError);
  return (error as TRPCError).code;
};

describe("admin.keys.resume", () => {
  it("runs the completer for a stale key now: completed, audited, on the timeline in order, marked as completed by the completer", async () => {
    const { tenant, key } = await abandoned("admin-resume");
    const c = await adminCaller();
    const resumed = await c.admin.keys.resume({ tenantId: tenant.id, key });
    expect(resumed).toEqual({ outcome: "completed", status: 201, detail: null });
    const [payment] = await paymentsForKey(tenant.id, key);
    expect(payment).toMatchObject({ status: "succeeded" });
    expect(await chargesFor(payment!.id)).toHaveLength(1);

    await app.eventLog.flush();
    const detail = await c.admin.keys.get({ tenantId: tenant.id, key });
    expect(detail.key).toMatchObject({ state: "completed", completedBy: "completer", completerAttempts: 1 });
    const steps = detail.timeline.map((e) => `${e.source}:${e.type}`);
    expect(steps).toEqual([
      "key:claimed",
      "key:released",
      "key:completer_attempt",
      "key:takeover",
      "key:completed_by_completer",
      "operator:resume",
    ]);
    const times = detail.timeline.map((e) => e.at);
    expect(times).toEqual([...times].sort());
    expect(times.every((t) => /\.\d{6}Z$/.test(t))).toBe(true);
    expect(await c.admin.audit.list({ tenantId: tenant.id, key })).toEqual([
      expect.objectContaining({ action: "resume", detail: { outcome: "completed", status: 201, detail: null } }),
    ]);

    const page = await c.admin.keys.list({ tenantId: tenant.id });
    expect(page.items).toEqual([expect.objectContaining({ key, state: "completed", completedBy: "completer", completerAttempts: 1 })]);
    // Finished now: nothing left to resume.
    expect(await codeOf(c.admin.keys.resume({ tenantId: tenant.id, key }))).toBe("UNPROCESSABLE_CONTENT");
  });

  it("is refused while a holder's lease still runs, for a procedure it cannot re-run, and for an unknown key; nothing is audited", async () => {
    const tenant = await newTenant("admin-resume-refused");
    await seedKeys(tenant.id, [
      { key: "leased", state: "in_progress", leaseSeconds: 60 },
      { key: "atomic", state: "in_progress", leaseSeconds: -5, procedure: "accounts.deposit" },
    ]);
    const c = await adminCaller();
    expect(await codeOf(c.admin.keys.resume({ tenantId: tenant.id, key: "leased" }))).toBe("CONFLICT");
    expect(await codeOf(c.admin.keys.resume({ tenantId: tenant.id, key: "atomic" }))).toBe("UNPROCESSABLE_CONTENT");
    expect(await codeOf(c.admin.keys.resume({ tenantId: tenant.id, key: "missing" }))).toBe("NOT_FOUND");
    expect(await c.admin.audit.list({ tenantId: tenant.id })).toEqual([]);
  });
});

describe("needs attention", () => {
  it("a key the completer gave up on: its own display state, counted, filtered, with the last error; Resume now finishes it", async () => {
    const { tenant, key } = await abandoned("admin-attention");
    // The provider stays down for both attempts the policy allows.
    await withProviderDown(async (down) => {
      for (let i = 0; i < 20; i++) {
        await down.completer.completeDueKeys({ tenantId: tenant.id, maxAttempts: 2, backoffMs: 10, maxBackoffMs: 20 });
        const [row] = await database().sql<{ gave_up: boolean }[]>`
          select completer_gave_up_at is not null as gave_up from idempotency_keys where tenant_id = ${tenant.id} and key = ${key}`;
        if (row!.gave_up) break;
        await new Promise((r) => setTimeout(r, 30));
      }
    });
    const c = await adminCaller();
    const counts = await c.admin.keys.counts({ tenantId: tenant.id });
    expect(counts.needs_attention).toEqual({ value: 1, kind: "exact" });
    const listed = await c.admin.keys.list({ tenantId: tenant.id, state: "needs_attention" });
    expect(listed.items).toEqual([
      expect.objectContaining({ key, state: "needs_attention", storedState: "in_progress", completerAttempts: 2 }),
    ]);
    expect((await c.admin.keys.list({ tenantId: tenant.id, state: "completed" })).items).toEqual([]);
    const detail = await c.admin.keys.get({ tenantId: tenant.id, key });
    expect(detail.key.completerError).toMatch(/provider/i);

    expect(await c.admin.keys.resume({ tenantId: tenant.id, key })).toMatchObject({ outcome: "completed", status: 201 });
    expect((await c.admin.keys.list({ tenantId: tenant.id, state: "needs_attention" })).items).toEqual([]);
    expect((await c.admin.keys.counts({ tenantId: tenant.id })).needs_attention.value).toBe(0);
  });
});
