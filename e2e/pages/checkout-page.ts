/** The checkout: products, cart, coupon, payment scenario, Pay, the status line and the idempotency panel. */
import type { Locator, Page } from "@playwright/test";

export type Scenario = "card" | "slow" | "error" | "decline";

export class CheckoutPage {
  readonly payButton: Locator;
  readonly status: Locator;
  readonly couponCode: Locator;
  readonly scenario: Locator;
  readonly cart: Locator;
  readonly key: Locator;
  readonly attempts: Locator;

  constructor(readonly page: Page) {
    this.payButton = page.getByRole("button", { name: /^Pay / });
    this.status = page.getByRole("status");
    this.couponCode = page.getByLabel("Coupon code");
    this.scenario = page.getByLabel("Payment scenario");
    this.cart = page.getByRole("table", { name: "Cart" });
    this.key = page.getByRole("region", { name: "Idempotency" }).getByTestId("idempotency-key");
    this.attempts = page.getByRole("list", { name: "Attempts" });
  }

  async goto(): Promise<void> {
    await this.page.goto("/checkout");
  }

  async add(productName: string, times = 1): Promise<void> {
    for (let i = 0; i < times; i++) await this.page.getByRole("button", { name: `Add ${productName} to cart` }).click();
  }

  async choose(scenario: Scenario): Promise<void> {
    await this.scenario.selectOption(scenario);
  }

  /** The Idempotency-Key the next Pay will send (minted when the cart changed). */
  async currentKey(): Promise<string> {
    return this.page.evaluate(
      () => (JSON.parse(localStorage.getItem("eo-checkout:intent") ?? "null") as { key: string } | null)?.key ?? "",
    );
  }
}

export class ConfirmationPage {
  readonly heading: Locator;
  readonly orderId: Locator;
  readonly paymentId: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole("heading", { name: "Order confirmed" });
    const facts = page.getByRole("definition");
    this.orderId = facts.nth(0).getByRole("code");
    this.paymentId = facts.nth(1).getByRole("code");
  }
}
