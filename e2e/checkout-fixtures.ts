/**
 * Fixtures for checkout tests: the page objects, every request the page
 * makes to the pay procedure (with the key it carried), and what the
 * database holds for a key: its orders, payments, ledger entries and the
 * key's own row.
 */
import type { Request } from "@playwright/test";
import type { Sql } from "postgres";
import { test as base, expect } from "./fixtures";
import { CheckoutPage, ConfirmationPage } from "./pages/checkout-page";

const DEMO_TENANT = "ten_demo";

export type KeyEffects = {
  orders: { id: string; status: string; payment_id: string | null }[];
  payments: { id: string; status: string; amount_minor: string }[];
  ledger: { direction: string; amount_minor: string }[];
  key: { state: string; response_status: number | null; replay_count: number } | undefined;
};

export async function effectsOf(db: Sql, key: string): Promise<KeyEffects> {
  const [orders, payments, ledger, keys] = await Promise.all([
    db<KeyEffects["orders"]>`select id, status, payment_id from orders where tenant_id = ${DEMO_TENANT} and idempotency_key = ${key}`,
    db<KeyEffects["payments"]>`select id, status, amount_minor from payments where tenant_id = ${DEMO_TENANT} and idempotency_key = ${key}`,
    db<
      KeyEffects["ledger"]
    >`select direction, amount_minor from ledger_entries where tenant_id = ${DEMO_TENANT} and idempotency_key = ${key}`,
    db<
      NonNullable<KeyEffects["key"]>[]
    >`select state, response_status, replay_count from idempotency_keys where tenant_id = ${DEMO_TENANT} and key = ${key}`,
  ]);
  return { orders, payments, ledger, key: keys[0] };
}

/** Exactly one order, one succeeded payment and one balanced movement for the key. */
export async function expectChargedOnce(db: Sql, key: string): Promise<KeyEffects> {
  const effects = await effectsOf(db, key);
  expect(effects.orders).toHaveLength(1);
  expect(effects.orders[0]!.status).toBe("paid");
  expect(effects.payments).toHaveLength(1);
  expect(effects.payments[0]!.status).toBe("succeeded");
  expect(effects.ledger.map((e) => e.direction).sort()).toEqual(["credit", "debit"]);
  expect(effects.ledger[0]!.amount_minor).toBe(effects.payments[0]!.amount_minor);
  return effects;
}

type Fixtures = {
  checkoutPage: CheckoutPage;
  confirmation: ConfirmationPage;
  /** Every pay request the page sent, in order. */
  payRequests: Request[];
};

export const test = base.extend<Fixtures>({
  checkoutPage: async ({ page }, provide) => {
    const checkout = new CheckoutPage(page);
    await checkout.goto();
    await provide(checkout);
  },
  confirmation: async ({ page }, provide) => {
    await provide(new ConfirmationPage(page));
  },
  payRequests: async ({ page }, provide) => {
    const seen: Request[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/api/trpc/checkout.pay")) seen.push(r);
    });
    await provide(seen);
  },
});

export { expect };
