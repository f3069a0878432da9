/**
 * The checkout in a real browser, against the real server and database:
 * duplicates from the user, the network and reloads all end in one order,
 * one payment and one money movement for the key — checked in the database.
 * Within one tab, a click while a payment runs joins it (one retry loop per
 * key): it sends nothing, and the attempts list says it joined. Across tabs
 * the server is what keeps it to one payment.
 */
import type { Page } from "@playwright/test";
import { effectsOf, expect, expectChargedOnce, test } from "../checkout-fixtures";

const MUG = "Mug “Exactly once”";
/** The event writer adds replays to the key's count every 5 seconds (server/keys/events.ts). */
const REPLAY_COUNTED = { timeout: 12_000 };

/**
 * Pay requests take 400 ms to leave the browser, as on a slow network: the
 * page stays put long enough for every click or key press to send its
 * request, and the duplicates reach the server together.
 */
async function slowNetwork(page: Pick<Page, "route">) {
  await page.route("**/api/trpc/checkout.pay**", async (route) => {
    await new Promise((r) => setTimeout(r, 400));
    await route.continue();
  });
}
const STICKERS = "Sticker pack";

test.describe("paying more than once for one cart", () => {
  test("a double-click on Pay places one order: the second click joins the first", async ({
    checkoutPage,
    confirmation,
    payRequests,
    db,
    page,
  }) => {
    await slowNetwork(page);
    await checkoutPage.add(MUG);
    const key = await checkoutPage.currentKey();
    await checkoutPage.payButton.dblclick();
    await expect(confirmation.heading).toBeVisible();
    await expect(page.getByRole("list", { name: "Attempts" }).getByRole("listitem")).toHaveText([
      "Request: a second click joined the attempt already running",
      /^Request: answered \(|^Request: answered$/,
    ]);
    expect(payRequests).toHaveLength(1);
    expect(new Set(payRequests.map((r) => r.headers()["idempotency-key"]))).toEqual(new Set([key]));
    const effects = await expectChargedOnce(db, key);
    await expect(confirmation.orderId).toHaveText(effects.orders[0]!.id);
  });

  test("five fast clicks on Pay place one order", async ({ checkoutPage, confirmation, payRequests, db, page }) => {
    await slowNetwork(page);
    await checkoutPage.add(STICKERS, 2);
    const key = await checkoutPage.currentKey();
    await checkoutPage.payButton.click({ clickCount: 5, delay: 0 });
    await expect(confirmation.heading).toBeVisible();
    await expect(page.getByRole("list", { name: "Attempts" }).getByRole("listitem").filter({ hasText: "joined" })).toHaveCount(4);
    expect(payRequests).toHaveLength(1);
    await expectChargedOnce(db, key);
  });

  test("Enter pressed twice places one order", async ({ checkoutPage, confirmation, payRequests, db, page }) => {
    await slowNetwork(page);
    await checkoutPage.add(MUG);
    const key = await checkoutPage.currentKey();
    await checkoutPage.couponCode.focus();
    await page.keyboard.press("Enter");
    await page.keyboard.press("Enter");
    await expect(confirmation.heading).toBeVisible();
    expect(payRequests).toHaveLength(1);
    await expectChargedOnce(db, key);
  });

  test("two tabs paying for the same cart at once charge it once", async ({ context, checkoutPage, db }) => {
    // Both payments are on the wire together (otherwise the second tab just sees its cart already paid).
    await slowNetwork(context);
    await checkoutPage.add(MUG);
    await checkoutPage.add(STICKERS);
    const key = await checkoutPage.currentKey();
    const second = await context.newPage();
    await second.goto("/checkout");
    const secondPay = second.getByRole("button", { name: /^Pay / });
    await expect(secondPay).toHaveText((await checkoutPage.payButton.textContent()) ?? "");
    await Promise.all([checkoutPage.payButton.click(), secondPay.click()]);
    const heading = { name: "Order confirmed" } as const;
    await expect(checkoutPage.page.getByRole("heading", heading)).toBeVisible();
    await expect(second.getByRole("heading", heading)).toBeVisible();
    const effects = await expectChargedOnce(db, key);
    for (const tab of [checkoutPage.page, second]) await expect(tab.getByRole("definition").first()).toHaveText(effects.orders[0]!.id);
  });
});

test.describe("retries the network forces", () => {
  test("the answer is lost after the server processed it: the retry gets the same order", async ({
    checkoutPage,
    confirmation,
    payRequests,
    page,
    db,
  }) => {
    await checkoutPage.add(MUG);
    const key = await checkoutPage.currentKey();
    let dropped = false;
    await page.route("**/api/trpc/checkout.pay**", async (route) => {
      if (dropped) return route.continue();
      dropped = true;
      // The server runs the payment, then the answer never reaches the page.
      await route.fetch();
      await route.abort("connectionreset");
    });
    await checkoutPage.payButton.click();
    await expect(confirmation.heading).toBeVisible();
    expect(payRequests.length).toBeGreaterThanOrEqual(2);
    expect(new Set(payRequests.map((r) => r.headers()["idempotency-key"]))).toEqual(new Set([key]));
    const effects = await expectChargedOnce(db, key);
    await expect(confirmation.orderId).toHaveText(effects.orders[0]!.id);
    // The replay count comes from the event writer, which adds replays up every 5 seconds.
    await expect.poll(async () => (await effectsOf(db, key)).key?.replay_count, REPLAY_COUNTED).toBeGreaterThanOrEqual(1);
    const replays = (await effectsOf(db, key)).key!.replay_count;
    // The confirmation's count is the server's (the dashboard's), and agrees with the replay its own list shows.
    await expect(page.getByRole("region", { name: "Idempotency" })).toContainText(`${replays} replay${replays === 1 ? "" : "s"} recorded`);
  });

  test("a reload while paying resumes with the same key", async ({ checkoutPage, confirmation, payRequests, page, db }) => {
    await checkoutPage.add(STICKERS);
    await checkoutPage.choose("slow");
    const key = await checkoutPage.currentKey();
    const sent = page.waitForRequest("**/api/trpc/checkout.pay**");
    await checkoutPage.payButton.click();
    await sent;
    await page.reload();
    // A reload is not a lost connection: the page says it resumes, and the cut-off request is named as such.
    await expect(checkoutPage.status).toHaveText(/^Resuming the payment you started before the reload/);
    await expect(checkoutPage.attempts.getByRole("listitem").first()).toHaveText("Request: cut off by the page reload");
    await expect(confirmation.heading).toBeVisible({ timeout: 20_000 });
    expect(payRequests.length).toBeGreaterThanOrEqual(2);
    expect(new Set(payRequests.map((r) => r.headers()["idempotency-key"]))).toEqual(new Set([key]));
    await expectChargedOnce(db, key);
  });

  test("a slow provider: the button is busy, a second click joins the payment in flight, one payment", async ({
    checkoutPage,
    confirmation,
    payRequests,
    db,
  }) => {
    await checkoutPage.add(MUG);
    await checkoutPage.choose("slow");
    const key = await checkoutPage.currentKey();
    await checkoutPage.payButton.click();
    await expect(checkoutPage.status).toHaveText("Paying…");
    // Busy, in flight, and a second click joins rather than sending again.
    await expect(checkoutPage.payButton).toHaveAttribute("aria-busy", "true");
    await expect(checkoutPage.payButton).toContainText("paying…");
    await expect(checkoutPage.attempts.getByRole("listitem")).toHaveText(["Request: in flight…"]);
    await checkoutPage.payButton.click();
    await expect(checkoutPage.attempts.getByRole("listitem")).toHaveText([
      "Request: in flight…",
      "Request: a second click joined the attempt already running",
    ]);
    await expect(confirmation.heading).toBeVisible({ timeout: 20_000 });
    expect(payRequests.length).toBe(1);
    await expectChargedOnce(db, key);
  });

  test("a provider error on the first attempt is retried downstream: one charge", async ({ checkoutPage, confirmation, db, page }) => {
    await checkoutPage.add(MUG);
    await checkoutPage.choose("error");
    const key = await checkoutPage.currentKey();
    await checkoutPage.payButton.click();
    await expect(confirmation.heading).toBeVisible();
    await expectChargedOnce(db, key);
    // The provider's failed first call is shown, then the retry under the same provider key that charged.
    await expect(page.getByRole("list", { name: "Provider calls" }).getByRole("listitem")).toHaveText([
      /^500: the provider failed; retried with the same provider key/,
      /^201: charged/,
    ]);
  });
});

test.describe("refusals", () => {
  test("a decline shows its reason, and paying again shows the same decline (replayed)", async ({ checkoutPage, db }) => {
    await checkoutPage.add(MUG);
    await checkoutPage.choose("decline");
    const key = await checkoutPage.currentKey();
    await checkoutPage.payButton.click();
    await expect(checkoutPage.status).toContainText("Declined: The card was declined.");
    await checkoutPage.payButton.click();
    // The list shows the second request in flight first; its line then becomes the replayed decline.
    await expect(checkoutPage.attempts.getByRole("listitem")).toHaveText([
      /^Request: a final answer, not retried \(402\)$/,
      /^Request: a final answer, not retried \(402\) — replayed from the stored result$/,
    ]);
    await expect(checkoutPage.status).toContainText("Declined: The card was declined.");
    // The replay count comes from the event writer, which adds replays up every 5 seconds.
    await expect.poll(async () => (await effectsOf(db, key)).key?.replay_count, REPLAY_COUNTED).toBe(1);
    const effects = await effectsOf(db, key);
    expect(effects.key).toMatchObject({ state: "failed", response_status: 402, replay_count: 1 });
    expect(effects.payments).toEqual([expect.objectContaining({ status: "failed" })]);
    expect(effects.ledger).toHaveLength(0);
  });

  test("changing the cart after a failure is a new intent: a new key and a new order, not a 422", async ({
    checkoutPage,
    confirmation,
    db,
  }) => {
    await checkoutPage.add(MUG);
    await checkoutPage.choose("decline");
    const declinedKey = await checkoutPage.currentKey();
    await checkoutPage.payButton.click();
    await expect(checkoutPage.status).toContainText("Declined");
    await checkoutPage.choose("card");
    await checkoutPage.add(STICKERS);
    const newKey = await checkoutPage.currentKey();
    expect(newKey).not.toBe(declinedKey);
    await checkoutPage.payButton.click();
    await expect(confirmation.heading).toBeVisible();
    await expectChargedOnce(db, newKey);
    expect((await effectsOf(db, declinedKey)).orders).toEqual([expect.objectContaining({ status: "payment_failed" })]);
  });
});
