/**
 * The storefront outside demo mode: off (404, nothing charged, no order) by
 * default, so a deployment with real secrets never takes anonymous orders
 * as the demo tenant; on only for the tenant STOREFRONT_TENANT_ID names.
 */
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { DEMO_TENANT } from "../../db/seed";
import { app, type App } from "../../server/app";
import { newKey, newTenant } from "../support/api";
import { appWith } from "../support/app";

const pay = async (key: string, via: App = app) => {
  const [product] = await database().sql<{ sku: string }[]>`select sku from products order by sku limit 1`;
  const body = JSON.stringify({ items: [{ sku: product!.sku, quantity: 1 }], destination: "acct_test_storefront" });
  return via.trpc.POST(
    new Request("http://127.0.0.1/api/trpc/checkout.pay", {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body,
    }),
  );
};
const paymentsUnder = (key: string) =>
  database().sql<{ tenant_id: string }[]>`select tenant_id from payments where idempotency_key = ${key}`;

describe("the storefront with demo mode off", () => {
  it("is off by default: 404, no payment, no charge", async () => {
    expect([app.settings.DEMO_MODE, app.settings.STOREFRONT_TENANT_ID]).toEqual([false, undefined]);
    const key = newKey("storefront-off");
    const res = await pay(key);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { data: { problem: { status: 404, type: "/problems/storefront-off" } } } });
    expect(await paymentsUnder(key)).toEqual([]);
  });

  it("sells for the tenant a deployment names, never the demo tenant", async () => {
    const tenant = await newTenant("storefront");
    const key = newKey("storefront-named");
    const res = await pay(key, appWith({ STOREFRONT_TENANT_ID: tenant.id }));
    expect(res.status).toBe(200);
    expect(await paymentsUnder(key)).toEqual([{ tenant_id: tenant.id }]);
  });

  it("in demo mode sells as the demo tenant", async () => {
    const key = newKey("storefront-demo");
    expect((await pay(key, appWith({ DEMO_MODE: true }))).status).toBe(200);
    expect(await paymentsUnder(key)).toEqual([{ tenant_id: DEMO_TENANT.id }]);
  });

  it("quotes a cart as the order then charges it, formatted on the server (the page computes no money)", async () => {
    const tenant = await newTenant("storefront-quote");
    const storefront = appWith({ STOREFRONT_TENANT_ID: tenant.id });
    const [cheap, dear] = await database().sql<
      { sku: string; price_minor: number }[]
    >`select sku, price_minor::int from products order by price_minor, sku limit 2`;
    const items = [
      { sku: cheap!.sku, quantity: 3 },
      { sku: dear!.sku, quantity: 7 },
    ];
    const caller = storefront.createCaller(
      await storefront.createContextInner({ headers: new Headers({ "Idempotency-Key": newKey("storefront-quote") }) }),
    );
    const quote = await caller.checkout.quote({ items });
    const expected = (minor: number) => `${Math.floor(minor / 100)}.${String(minor % 100).padStart(2, "0")}`;
    expect(quote.lines.map((l) => [l.sku, l.amount])).toEqual([
      [cheap!.sku, expected(cheap!.price_minor * 3)],
      [dear!.sku, expected(dear!.price_minor * 7)],
    ]);
    expect(quote.subtotal).toBe(expected(cheap!.price_minor * 3 + dear!.price_minor * 7));
    const order = await caller.checkout.pay({ items, destination: "acct_test_storefront" });
    expect(order.total).toBe(quote.subtotal);
    expect(order.items.map((i) => i.amount)).toEqual(quote.lines.map((l) => l.amount));
    await expect(caller.checkout.quote({ items: [{ sku: "no-such-sku", quantity: 1 }] })).rejects.toMatchObject({ code: "BAD_REQUEST" });
  });

  it("a server-side call that comes with its tenant (the completer's rerun of a key) runs as that tenant, not the storefront's", async () => {
    const storefront = await newTenant("storefront-now");
    const keyOwner = await newTenant("storefront-then");
    const selling = appWith({ STOREFRONT_TENANT_ID: storefront.id });
    const [product] = await database().sql<{ sku: string }[]>`select sku from products order by sku limit 1`;
    const key = newKey("storefront-rerun");
    const caller = selling.createCaller(
      await selling.createContextInner({ tenant: keyOwner, headers: new Headers({ "Idempotency-Key": key }) }),
    );
    await caller.checkout.pay({ items: [{ sku: product!.sku, quantity: 1 }], destination: "acct_test_storefront" });
    expect(await paymentsUnder(key)).toEqual([{ tenant_id: keyOwner.id }]);
  });
});
