/** Shoppers never read the API's developer text: every problem maps to words written for them. */
import { describe, expect, it } from "vitest";
import { shopperMessage } from "./messages";

describe("shopperMessage", () => {
  it("replaces the middleware's text for a key still in progress or a changed request", () => {
    const busy = shopperMessage({
      type: "/problems/idempotency-key-in-progress",
      status: 409,
      detail: "A request with this Idempotency-Key is still being processed; retry after the time given in Retry-After.",
    });
    expect(busy).not.toMatch(/Idempotency-Key|Retry-After/);
    expect(busy).toMatch(/still being processed/);
    const changed = shopperMessage({
      type: "/problems/idempotency-key-mismatch",
      status: 422,
      detail: "This Idempotency-Key was first used for a different request; use a new key for a new operation.",
    });
    expect(changed).not.toMatch(/Idempotency-Key/);
  });

  it("passes through only details written for shoppers (a decline, a coupon)", () => {
    expect(shopperMessage({ type: "/problems/payment-declined", status: 402, detail: "The card was declined." })).toBe(
      "The card was declined.",
    );
    expect(shopperMessage({ type: "/problems/coupon-redeemed", status: 422, detail: "The coupon SAVE10 has already been used." })).toBe(
      "The coupon SAVE10 has already been used.",
    );
    expect(shopperMessage({ type: "/problems/validation", status: 400, detail: "items.0.sku: no product with the SKU x" })).not.toContain(
      "items.0",
    );
    expect(shopperMessage({ status: 409, detail: "retry after the time given in Retry-After" })).not.toContain("Retry-After");
  });
});
