/**
 * Every page but the lab at a phone's width and a laptop's, each in its
 * fullest state (long keys, every column filled, replays counted, an
 * operator's action in the audit log): the page never scrolls sideways and
 * axe finds nothing. A wide table becomes cards or scrolls in its own box
 * (app/globals.css); this is what says so for every page.
 */
import { randomUUID } from "node:crypto";
import type { APIRequestContext, Page } from "@playwright/test";
import { expect, test } from "../checkout-fixtures";
import { AdminKeyPage, AdminPage } from "../pages/admin-page";
import { expectPageFits, LAPTOP, PHONE } from "../support/fit";

/** Keys are up to 255 characters; these are 200, one unbroken run after the UUID. */
const longKey = (label: string) => `e2e-phone-${label}-${randomUUID()}-${"long".repeat(40)}`.slice(0, 200);

/** The page as it stands, at the phone's width and then the laptop's. */
async function expectFitsBoth(page: Page, label: string): Promise<void> {
  for (const viewport of [PHONE, LAPTOP]) {
    await page.setViewportSize(viewport);
    await expectPageFits(page, label);
  }
}

/** An order of two stickers: a ledger movement and a provider charge under the key. */
function order(api: APIRequestContext, key: string) {
  return api.post("/api/v1/orders", {
    data: { items: [{ sku: "sticker-pack", quantity: 2 }] },
    headers: { "idempotency-key": key },
  });
}

test.use({ viewport: PHONE });

test("the home page fits", async ({ page, homePage, catalog }) => {
  await homePage.goto();
  await expect(homePage.productRows).toHaveCount(catalog.length);
  await expectFitsBoth(page, "home");
});

test("the API docs fit, every fold open", async ({ page, docsPage }) => {
  // The longest page there is: axe reads it twice, on two cores shared with the server.
  test.setTimeout(90_000);
  await docsPage.goto();
  await expect(docsPage.heading).toBeVisible();
  // The answer fields and the problem types, folded by default, are the widest parts.
  for (const summary of await page.locator("summary").all()) await summary.click();
  await expectFitsBoth(page, "docs");
});

test("the problem types fit, their meanings showing code", async ({ page }) => {
  await page.goto("/docs/problems");
  await expect(page.getByRole("heading", { level: 1, name: "Problem types" })).toBeVisible();
  // The meanings are Markdown: their inline code is code, not backticks.
  await expect(page.getByRole("cell", { name: /needs an Idempotency-Key header/ }).getByRole("code")).toHaveText("Idempotency-Key");
  await expect(page.getByRole("table")).not.toContainText("`");
  await expectFitsBoth(page, "problem types");

  // The type's own URI leads to its page; the longest slug there is.
  await page.goto("/problems/idempotency-key-invalid");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("/problems/idempotency-key-invalid");
  await expectFitsBoth(page, "a problem type");
});

test("the checkout with every product in the cart, and its confirmation with the provider's calls", async ({
  page,
  checkoutPage,
  confirmation,
  catalog,
}) => {
  for (const product of catalog) await checkoutPage.add(product.name);
  await expect(checkoutPage.cart.getByRole("row")).toHaveCount(catalog.length + 1);
  await expect(checkoutPage.payButton).toHaveText(/^Pay \d/);
  await expect(checkoutPage.key).toBeVisible();
  await expectFitsBoth(page, "checkout");

  // The flaky provider fails once: the confirmation lists both calls.
  await checkoutPage.choose("error");
  await checkoutPage.payButton.click();
  await expect(confirmation.heading).toBeVisible();
  await expect(page.getByRole("list", { name: "Provider calls" }).getByRole("listitem")).toHaveCount(2);
  await expect(page.getByRole("list", { name: "Attempts" })).toContainText("answered");
  await expectFitsBoth(page, "confirmation");
});

test("the admin sign-in, the dashboard and a key's page, every table filled", async ({ page, api, db, tenant }) => {
  // Replays reach the dashboard in 5-second batches; axe reads three pages twice.
  test.setTimeout(120_000);
  const admin = new AdminPage(page);
  const keyPage = new AdminKeyPage(page);
  const [paid, stopped] = [longKey("paid"), longKey("stopped")];
  // Paid twice: the replay fills "Replays" and "Last replay".
  for (let i = 0; i < 2; i++) expect((await order(api, paid)).status()).toBe(201);
  // A holder that stopped right after claiming, for the same request: recovered below, so the audit log names the key.
  const [template] = await db<{ procedure: string; fingerprint: string; request: string }[]>`
    select procedure, fingerprint, request from idempotency_keys where tenant_id = ${tenant.id} and key = ${paid}`;
  await db`
    insert into idempotency_keys (tenant_id, key, procedure, fingerprint, request, state, locked_until, expires_at)
    values (${tenant.id}, ${stopped}, ${template!.procedure}, ${template!.fingerprint}, ${template!.request},
            'in_progress', now() + interval '10 minutes', now() + interval '1 day')`;

  await admin.goto({ tenant: tenant.id });
  await expect(admin.signInHeading).toBeVisible();
  await expectFitsBoth(page, "admin sign-in");
  await admin.signIn();
  await expect(admin.heading).toBeVisible();

  await keyPage.goto(tenant.id, stopped);
  await keyPage.recoverButton.click();
  await keyPage.confirmRecover.click();
  await expect(keyPage.auditLog).toContainText("Recovered the lock");
  // The retry takes the recovered key over and runs the order once; the next one replays it.
  expect((await order(api, stopped)).status()).toBe(201);
  expect((await order(api, stopped)).headers()["idempotent-replayed"]).toBe("true");

  await admin.goto({ tenant: tenant.id });
  await expect(admin.keyRows).toHaveCount(2);
  await expect(admin.cell(paid, "replays")).toHaveText("1", { timeout: 20_000 });
  await expect(page.getByRole("region", { name: "Your sessions" }).getByRole("table")).toBeVisible();
  await expect(admin.page.getByRole("region", { name: "Audit log" }).getByRole("table")).toContainText(stopped);
  await expectFitsBoth(page, "admin dashboard");

  await keyPage.goto(tenant.id, stopped);
  await expect(keyPage.field("State")).toHaveText("Completed", { timeout: 20_000 });
  await expect(keyPage.ledgerRows()).toHaveCount(2);
  await expect(keyPage.chargesTable.getByTestId("payment-standing")).toHaveAttribute("data-standing", "charged");
  await expect(keyPage.timeline).toContainText("Replayed the stored result");
  await expect(keyPage.auditLog.getByRole("table")).toContainText("Recovered the lock");
  await expectFitsBoth(page, "a key's page");
});
