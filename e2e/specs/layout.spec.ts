/**
 * The pages at the widths people demo them on: the keys table fits its card
 * at 1280 and 1920 px, the checkout passes axe, and — with
 * UPDATE_SCREENSHOTS=1 — the README's screenshots are taken here, at 1280 px
 * (the checkout also at a phone's 390), from the real pages (`e2e/screenshots/`).
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import type { Page } from "@playwright/test";
import { expect, test } from "../fixtures";
import { AdminKeyPage, AdminPage } from "../pages/admin-page";
import { CheckoutPage } from "../pages/checkout-page";
import { LAB_SCENARIOS } from "../../server/lab/scenarios";
import { LabPage } from "../pages/lab-page";
import { expectNoAxeViolations } from "../support/axe";
import { PHONE } from "../support/fit";
import { chargedButUnrecorded } from "../support/lab-crash";

test.use({ viewport: { width: 1280, height: 900 } });

const SCREENSHOTS = path.join(import.meta.dirname, "..", "screenshots");
/** The whole page, or with `fullPage: false` the screen as it stands (a phone's page is too long to read in a README). */
async function screenshot(page: Page, name: string, { fullPage = true } = {}): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS === "1") await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage });
}

test("the keys table fits its card at 1280 and 1920 px, with long keys; one key reads “1 key”", async ({ page, api, tenant }) => {
  const keys = [`e2e-layout-${randomUUID()}-${"long".repeat(20)}`, `e2e-layout-${randomUUID()}`];
  // Each paid twice: the replay fills the "Last replay" column, the widest there is.
  for (const key of [...keys, ...keys]) {
    const res = await api.post("/api/v1/payments", {
      data: { amount: "3.00", currency: "EUR", destination: "acct_e2e_layout" },
      headers: { "idempotency-key": key },
    });
    expect(res.status()).toBe(201);
  }
  const admin = new AdminPage(page);
  await admin.goto({ tenant: tenant.id });
  await admin.signIn();
  await expect(admin.heading).toBeVisible();
  await expect(admin.keyRows).toHaveCount(2);
  for (const width of [1280, 1920]) {
    await page.setViewportSize({ width, height: 900 });
    const { table, box } = await admin.keysTable.evaluate((t) => ({ table: t.scrollWidth, box: t.parentElement!.clientWidth }));
    expect(table, `keys table at ${width} px`).toBeLessThanOrEqual(box);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  await screenshot(page, "admin");

  await admin.search(admin.keySearch, keys[1]!);
  await expect(admin.keyRows).toHaveCount(1);
  await expect(page.getByText(/^Showing 1 key\.$/)).toBeVisible();
});

test("the sign-in page says where the demo password is documented (demo mode)", async ({ page }) => {
  const admin = new AdminPage(page);
  await admin.goto();
  await expect(admin.signInHeading).toBeVisible();
  await expect(page.getByRole("note")).toContainText("documented in the README under “The admin dashboard”");
});

test("the checkout has no accessibility violations", async ({ page }) => {
  const checkout = new CheckoutPage(page);
  await checkout.goto();
  await checkout.add("Sticker pack");
  await expect(checkout.key).toBeVisible();
  await expectNoAxeViolations(page);
  await screenshot(page, "checkout");
});

test("screenshot of the checkout on a phone: the cart as cards, the key wrapping", async ({ page }) => {
  test.skip(process.env.UPDATE_SCREENSHOTS !== "1", "only when the README's screenshots are being updated");
  await page.setViewportSize(PHONE);
  const checkout = new CheckoutPage(page);
  await checkout.goto();
  await checkout.add("Sticker pack");
  await checkout.add("Mug “Exactly once”");
  await expect(checkout.key).toBeVisible();
  await expect(checkout.payButton).toHaveText(/^Pay \d/);
  // One screen from the cart down: the cards, the form and the key, as a shopper sees them after adding.
  await page.getByRole("heading", { name: "Cart" }).evaluate((h) => h.scrollIntoView({ block: "start" }));
  await screenshot(page, "checkout-phone", { fullPage: false });
});

test("screenshots of the lab, every scenario: a protected run next to the unprotected twin", async ({ page }) => {
  test.skip(process.env.UPDATE_SCREENSHOTS !== "1", "only when the README's screenshots are being updated");
  // Every scenario runs twice (protected, then the twin), the crash with its 2 s lease and pause.
  test.setTimeout(LAB_SCENARIOS.length * 60_000);
  const lab = new LabPage(page);
  for (const scenario of LAB_SCENARIOS) {
    await lab.goto();
    await lab.run(scenario.title);
    await expect(lab.status).toHaveText(/^Finished/, { timeout: 90_000 });
    await screenshot(page, `lab-${scenario.id}`);
  }
});

test("screenshot of a key page: a payment the provider charged before the worker stopped", async ({ page, db }) => {
  test.skip(process.env.UPDATE_SCREENSHOTS !== "1", "only when the README's screenshots are being updated");
  const paid = await chargedButUnrecorded(page.request, db);
  const admin = new AdminPage(page);
  await admin.goto({ tenant: paid.tenantId });
  await admin.signIn();
  await expect(admin.heading).toBeVisible();
  const keyPage = new AdminKeyPage(page);
  await keyPage.goto(paid.tenantId, paid.key);
  await expect(keyPage.chargesTable.getByTestId("payment-standing")).toContainText("charged at the provider, not recorded yet");
  await screenshot(page, "admin-key-charged-unrecorded");
});
