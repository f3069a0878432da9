/**
 * With DATABASE_REPLICA_URL, the dashboard's overview (the keys list, the
 * counts, the activity) reads the standby, and one key in full (what an
 * operator acts on) reads the primary. The "standby" here is a second
 * database holding other rows for the same tenant, so where each answer came
 * from shows in what it contains.
 */
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { closeReplica, database } from "../../db/client";
import { createFreshDatabase, type FreshDatabase } from "../support/database";
import { newTenant } from "../support/api";
import { adminCaller, seedKeys } from "./support";

const replica = vi.hoisted(() => ({ url: undefined as string | undefined }));

vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return {
    ...actual,
    env: {
      ...actual.env,
      ADMIN_PASSWORD: "test-admin-password",
      get DATABASE_REPLICA_URL() {
        return replica.url;
      },
    },
  };
});

let standby: FreshDatabase;

beforeAll(async () => {
  standby = await createFreshDatabase("replica");
  replica.url = standby.url;
}, 120_000);

afterAll(async () => {
  // The replica pool, opened by the first overview read, goes with the test's database.
  await closeReplica();
  await standby.dispose();
});

describe("admin reads with DATABASE_REPLICA_URL", () => {
  it("lists, counts and charts the standby's keys; shows one key from the primary", async () => {
    const tenant = await newTenant("replica-reads");
    await seedKeys(tenant.id, [{ key: "on-primary" }]);
    const other = postgres(standby.url, { max: 1, onnotice: () => {} });
    try {
      const [row] = await database().sql<Record<string, unknown>[]>`select * from tenants where id = ${tenant.id}`;
      await other`insert into tenants ${other(row!)}`;
      await other`
        insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, response_status, response_body, expires_at)
        values (${tenant.id}, 'on-standby', 'payments.create', 'f', 'r', 'in_progress', null, null, now() + interval '1 hour')`;
    } finally {
      await other.end({ timeout: 5 });
    }

    const c = await adminCaller();
    expect((await c.admin.keys.list({ tenantId: tenant.id })).items.map((k) => k.key)).toEqual(["on-standby"]);
    const counts = await c.admin.keys.counts({ tenantId: tenant.id });
    expect([counts.in_progress.value, counts.completed.value]).toEqual([1, 0]);
    expect(await c.admin.keys.activity({ tenantId: tenant.id })).toHaveLength(60);

    expect((await c.admin.keys.get({ tenantId: tenant.id, key: "on-primary" })).key.state).toBe("completed");
    await expect(c.admin.keys.get({ tenantId: tenant.id, key: "on-standby" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});
