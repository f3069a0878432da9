/**
 * The operator actions: recovering the key of a holder that stopped
 * mid-request lets the next retry take over at once and finish the work
 * exactly once; purging deletes expired keys and nothing else. Both land in
 * the audit log.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { TRPCError } from "@trpc/server";
import { afterEach, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { database } from "../../db/client";
import { effectsFor, ensureEffectsTable, keyRow, newTenant, post, uniqueKey, type TestTenant } from "../idempotency/fixture";
import { adminCaller, seedKeys } from "./support";

vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return { ...actual, env: { ...actual.env, ADMIN_PASSWORD: "test-admin-password" } };
});

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("admin-actions");
});

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

/** A holder in its own process, parked after its first committed phase with a long lease (see crash-child.ts). */
async function parkedHolder(key: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "tests/idempotency/crash-child.ts", "recoverable", tenant.id, key, "between"], {
    env: { ...process.env, DATABASE_URL: inject("databaseUrl"), IDEMPOTENCY_LEASE_MS: "120000", LOG_LEVEL: "silent" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  child.stdout.setEncoding("utf8");
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: string) => chunk.includes("holding") && resolve());
    child.once("exit", (code) => reject(new Error(`holder exited early (${code})`)));
  });
  return child;
}

describe("admin.keys.recover", () => {
  it("lets the next retry take over a key whose holder stopped mid-request, and the work finishes once", async () => {
    const key = uniqueKey("recover");
    const holder = await parkedHolder(key);
    holder.kill("SIGKILL");
    await once(holder, "exit");
    const c = await adminCaller();

    // The lease still runs for two minutes: without recovery a retry would wait it out.
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "in_progress", lease_expired: false });
    let page = await c.admin.keys.list({ tenantId: tenant.id, keyPrefix: key });
    expect(page.items).toEqual([expect.objectContaining({ key, state: "in_progress", stale: false, recoveryPoint: "recorded" })]);

    const recovered = await c.admin.keys.recover({ tenantId: tenant.id, key });
    expect(recovered).toMatchObject({ fence: 1, wasStale: false });
    page = await c.admin.keys.list({ tenantId: tenant.id, staleOnly: true, keyPrefix: key });
    expect(page.items).toEqual([expect.objectContaining({ key, stale: true })]);

    // The holder ran `recoverable`; the same request again takes over at once.
    const retry = await post(tenant, "/t/recoverable", { tag: key, amount: 13 }, key);
    expect(retry.status).toBe(201);
    expect((await effectsFor(tenant.id, key)).map((e) => e.note)).toEqual([`${key}:recorded`, `${key}:settled`]);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "2" });

    const audit = await c.admin.audit.list({ tenantId: tenant.id, key });
    expect(audit).toEqual([
      expect.objectContaining({
        action: "recover",
        tenantId: tenant.id,
        key,
        detail: expect.objectContaining({ fence: 1, wasStale: false }),
      }),
    ]);
  });

  it("refuses keys that are not in progress, and unknown keys", async () => {
    const own = await newTenant("admin-recover-refusals");
    await seedKeys(own.id, [
      { key: "finished", state: "completed" },
      { key: "gone", state: "in_progress", expiresInSeconds: -1 },
    ]);
    const c = await adminCaller();
    for (const [key, code] of [
      ["finished", "UNPROCESSABLE_CONTENT"],
      ["gone", "UNPROCESSABLE_CONTENT"],
      ["missing", "NOT_FOUND"],
    ] as const) {
      const error = await c.admin.keys.recover({ tenantId: own.id, key }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TRPCError);
      expect((error as TRPCError).code).toBe(code);
    }
    expect(await c.admin.audit.list({ tenantId: own.id })).toEqual([]);
  });
});

describe("admin.keys.purgeExpired", () => {
  it("deletes a tenant's expired keys, whatever their state, and keeps every live key and other tenants' keys", async () => {
    const own = await newTenant("admin-purge");
    const bystander = await newTenant("admin-purge-bystander");
    await seedKeys(own.id, [
      { key: "expired-done", state: "completed", expiresInSeconds: -10 },
      { key: "expired-stuck", state: "in_progress", leaseSeconds: -60, expiresInSeconds: -10 },
      { key: "expired-failed", state: "failed", expiresInSeconds: -1 },
      { key: "live-done", state: "completed" },
      { key: "live-stale", state: "in_progress", leaseSeconds: -60 },
    ]);
    await seedKeys(bystander.id, [{ key: "expired-elsewhere", expiresInSeconds: -10 }]);
    const c = await adminCaller();

    expect(await c.admin.keys.purgeExpired({ tenantId: own.id })).toEqual({ deleted: 3, remaining: false });

    const { sql } = database();
    const left = await sql<{ tenant_id: string; key: string }[]>`
      select tenant_id, key from idempotency_keys where tenant_id in (${own.id}, ${bystander.id}) order by key`;
    expect(left.map((r) => [r.tenant_id, r.key])).toEqual([
      [bystander.id, "expired-elsewhere"],
      [own.id, "live-done"],
      [own.id, "live-stale"],
    ]);
    const [entry] = await c.admin.audit.list({ tenantId: own.id });
    expect(entry).toMatchObject({
      action: "purge_expired",
      tenantId: own.id,
      key: null,
      detail: { deleted: 3, remaining: false, scope: own.id },
    });
  });
});
