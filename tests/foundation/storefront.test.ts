/**
 * The storefront outside demo mode: off (404, nothing charged, no order) by
 * default, so a deployment with real secrets never takes anonymous orders
 * as the demo tenant; on only for the tenant STOREFRONT_TENANT_ID names.
 */
import { afterEach, describe, expect, it } from "vitest";
import { POST } from "../../app/api/trpc/[trpc]/route";
import { database } from "../../db/client";
import { DEMO_TENANT } from "../../db/seed";
import { env } from "../../server/env";
import { newKey, newTenant } from "../support/api";

const pay = async (key: string) => {
  const [product] = await database().sql<{ sku: string }[]>`select sku from products order by sku limit 1`;
  const body = JSON.stringify({ items: [{ sku: product!.sku, quantity: 1 }], destination: "acct_test_storefront" });
  return POST(new Request("http://127.0.0.1/api/trpc/checkout.pay", { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body }));
};
const paymentsUnder = (key: string) => database().sql<{ tenant_id: string }[]>`select tenant_id from payments where idempotency_key = ${key}`;

afterEach(() => {
  env.DEMO_MODE = false;
  env.STOREFRONT_TENANT_ID = undefined;
});

describe("the storefront with demo mode off", () => {
  it("is off by default: 404, no payment, no charge", async () => {
    expect(env.DEMO_MODE).toBe(false);
    const key = newKey("storefront-off");
    const res = await pay(key);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { data: { problem: { status: 404, type: "/problems/storefront-off" } } } });
    expect(await paymentsUnder(key)).toEqual([]);
  });

  it("sells for the tenant a deployment names, never the demo tenant", async () => {
    const tenant = await newTenant("storefront");
    env.STOREFRONT_TENANT_ID = tenant.id;
    const key = newKey("storefront-named");
    const res = await pay(key);
    expect(res.status).toBe(200);
    expect(await paymentsUnder(key)).toEqual([{ tenant_id: tenant.id }]);
  });

  it("in demo mode sells as the demo tenant", async () => {
    env.DEMO_MODE = true;
    const key = newKey("storefront-demo");
    expect((await pay(key)).status).toBe(200);
    expect(await paymentsUnder(key)).toEqual([{ tenant_id: DEMO_TENANT.id }]);
  });
});
