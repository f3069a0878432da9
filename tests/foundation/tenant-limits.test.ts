/**
 * Limits per tenant: a budget of consequential requests per minute, counted
 * in PostgreSQL so every instance shares it, and a cap on the keys a tenant
 * holds. Both refuse with a 429 and Retry-After before anything is claimed;
 * reads, other tenants and the server's own callers are not counted. The
 * storefront's anonymous checkouts have a budget of their own per client
 * address and never take from their tenant's.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { database } from "../../db/client";
import { DomainError } from "../../server/errors";
import { createTenantLimits } from "../../server/tenants/limits";
import { app, type App } from "../../server/app";
import { PAYMENT, pay } from "../payments/support";
import { seedKeys } from "../admin/support";
import { api, barrier, newKey, newTenant } from "../support/api";
import { appWith } from "../support/app";

const BUDGET = 3;
const STOREFRONT_BUDGET = 4;
vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return {
    ...actual,
    env: { ...actual.env, TENANT_REQUESTS_PER_MINUTE: 3, TENANT_MAX_LIVE_KEYS: 0, STOREFRONT_REQUESTS_PER_MINUTE: 4 },
  };
});

const refusal = (error: unknown) => (error instanceof DomainError ? { slug: error.slug, retryAfter: error.extensions.retryAfter } : error);

describe("the request budget", () => {
  it("admits exactly its points out of 20 at once, across two instances' limiters, per tenant", async () => {
    const prefix = `test-${randomUUID()}`;
    // Two instances: two limiters over one table.
    const [one, two] = [
      createTenantLimits(database, { requestsPerMinute: 5, maxLiveKeys: 0, storefrontRequestsPerMinute: 0 }, prefix),
      createTenantLimits(database, { requestsPerMinute: 5, maxLiveKeys: 0, storefrontRequestsPerMinute: 0 }, prefix),
    ];
    const ready = barrier(20);
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        await ready();
        return (i % 2 ? one : two).admit("tenant-a").then(() => "admitted", refusal);
      }),
    );
    expect(outcomes.filter((o) => o === "admitted")).toHaveLength(5);
    for (const refused of outcomes.filter((o) => o !== "admitted"))
      expect(refused).toEqual({ slug: "too-many-requests", retryAfter: expect.any(Number) });
    const waits = outcomes.flatMap((o) => (typeof o === "object" && o && "retryAfter" in o ? [o.retryAfter as number] : []));
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...waits)).toBeLessThanOrEqual(60);
    // Another tenant has a budget of its own.
    await expect(one.admit("tenant-b")).resolves.toBeUndefined();
  });

  it("over REST: the fourth payment in a minute is a 429 with Retry-After, and nothing of it is claimed or charged", async () => {
    const tenant = await newTenant("budget-rest");
    for (let n = 0; n < BUDGET; n++) expect((await pay(tenant, newKey())).status).toBe(201);
    // Reads are not consequential: they never count.
    expect((await api(tenant).get("/v1/payments?limit=1")).status).toBe(200);
    const key = newKey("over-budget");
    const refused = await pay(tenant, key);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ type: "/problems/too-many-requests", status: 429 });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const { sql } = database();
    expect(await sql`select 1 from idempotency_keys where tenant_id = ${tenant.id} and key = ${key}`).toHaveLength(0);
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from payments where tenant_id = ${tenant.id}`;
    expect(row!.n).toBe(BUDGET);
    // Another tenant is unaffected, and so are the server's own callers (pages, the completer) of this one.
    expect((await pay(await newTenant("budget-other"), newKey())).status).toBe(201);
    const own = app.createCaller(await app.createContextInner({ tenant }));
    await expect(own.payments.create({ ...PAYMENT })).rejects.toThrow(/Idempotency-Key/);
  });
});

describe("the storefront's budget", () => {
  const checkout = async (key: string, address: string, storefront: App) => {
    const [product] = await database().sql<{ sku: string }[]>`select sku from products order by sku limit 1`;
    const res = await storefront.trpc.POST(
      new Request("http://127.0.0.1/api/trpc/checkout.pay", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key, "x-forwarded-for": address },
        body: JSON.stringify({ items: [{ sku: product!.sku, quantity: 1 }], destination: "acct_test_storefront" }),
      }),
    );
    const body = (await res.json()) as { error?: { data?: { problem?: { type?: string } } } };
    return { status: res.status, type: body.error?.data?.problem?.type, retryAfter: res.headers.get("retry-after") };
  };

  it("is per client address and apart from the tenant's: a burst of anonymous checkouts leaves the tenant's token admitted", async () => {
    const tenant = await newTenant("storefront-budget");
    const storefront = appWith({ STOREFRONT_TENANT_ID: tenant.id });
    const ready = barrier(10);
    const burst = await Promise.all(
      Array.from({ length: 10 }, async () => {
        await ready();
        return checkout(newKey("anonymous"), "203.0.113.7", storefront);
      }),
    );
    expect(burst.filter((r) => r.status === 200)).toHaveLength(STOREFRONT_BUDGET);
    for (const refused of burst.filter((r) => r.status !== 200))
      expect(refused).toMatchObject({ status: 429, type: "/problems/too-many-requests", retryAfter: expect.stringMatching(/^\d+$/) });
    // Another visitor has a budget of its own.
    expect((await checkout(newKey("anonymous"), "198.51.100.2", storefront)).status).toBe(200);
    // The shop's integration spent nothing of its budget on them: all of it is still there.
    for (let n = 0; n < BUDGET; n++) expect((await pay(tenant, newKey())).status).toBe(201);
    expect((await pay(tenant, newKey())).status).toBe(429);
    const [row] = await database().sql<{ n: number }[]>`select count(*)::int as n from payments where tenant_id = ${tenant.id}`;
    expect(row!.n).toBe(STOREFRONT_BUDGET + 1 + BUDGET);
  });
});

describe("the key cap", () => {
  const capped = (maxLiveKeys: number) =>
    createTenantLimits(database, { requestsPerMinute: 0, maxLiveKeys, storefrontRequestsPerMinute: 0 }, `test-${randomUUID()}`);
  /** What the middleware asks for a new key after the request was admitted. */
  const newKeyFor = async (limits: ReturnType<typeof capped>, tenantId: string) => {
    await limits.admit(tenantId);
    return limits.admitNewKey(tenantId).then(() => "admitted", refusal);
  };

  it("counts the keys a tenant holds, not those past their retention, and refuses a new key at the cap with key-quota-exceeded", async () => {
    const tenant = await newTenant("key-cap");
    await seedKeys(tenant.id, [{ key: newKey() }, { key: newKey() }, { key: newKey(), expiresInSeconds: -5 }]);
    await expect(newKeyFor(capped(3), tenant.id)).resolves.toBe("admitted");
    await expect(newKeyFor(capped(2), tenant.id)).resolves.toEqual({ slug: "key-quota-exceeded", retryAfter: 10 });
    await expect(newKeyFor(capped(2), (await newTenant("key-cap-other")).id)).resolves.toBe("admitted");
  });

  it("counts once for the 20 requests that find no count, and the count they share decides for all of them", async () => {
    const tenant = await newTenant("key-cap-herd");
    await seedKeys(tenant.id, [{ key: newKey() }, { key: newKey() }]);
    let counts = 0;
    const counting = () => (counts++, database());
    const limits = createTenantLimits(
      counting,
      { requestsPerMinute: 0, maxLiveKeys: 2, storefrontRequestsPerMinute: 0 },
      `test-${randomUUID()}`,
    );
    const ready = barrier(20);
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, async () => {
        await ready();
        return newKeyFor(limits, tenant.id);
      }),
    );
    expect(counts).toBe(1);
    expect(outcomes).toEqual(Array.from({ length: 20 }, () => ({ slug: "key-quota-exceeded", retryAfter: 10 })));
  });

  it("admits no more new keys in a burst than the cap less the count, though the count is 10 s old", async () => {
    const tenant = await newTenant("key-cap-burst");
    await seedKeys(tenant.id, [{ key: newKey() }]);
    const limits = capped(6);
    const ready = barrier(40);
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, async () => {
        await ready();
        return newKeyFor(limits, tenant.id);
      }),
    );
    expect(outcomes.filter((o) => o === "admitted")).toHaveLength(5);
  });
});
