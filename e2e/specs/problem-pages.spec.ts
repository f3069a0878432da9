/** A problem's `type` leads to a page: follow the URI an answer gives and read what it means, and find every type listed. */
import { expect, test } from "../fixtures";

test("the type of a 401 is a page that explains it and names the operations that answer with it", async ({ page, request }) => {
  const response = await request.get("/api/v1/products");
  expect(response.headers()["www-authenticate"]).toContain("Bearer");
  const { type } = (await response.json()) as { type: string };

  // The type stays put (clients match on it); its URI redirects to the page under /docs.
  expect(type).toBe("/problems/unauthorized");
  await page.goto(type);
  await expect(page).toHaveURL(/\/docs\/problems\/unauthorized$/);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(type);
  await expect(page.getByText(/^401 Unauthorized\./)).toBeVisible();
  await expect(page.getByRole("region", { name: "Operations" })).toContainText("GET /api/v1/products");
});

test("the index lists every type with a link to its page", async ({ page }) => {
  await page.goto("/docs/problems");
  await page.getByRole("link", { name: "/problems/insufficient-funds" }).click();
  await expect(page.getByRole("region", { name: "Members" })).toContainText("balance");
  await expect(page.getByRole("region", { name: "Operations" })).toContainText("POST /api/v1/accounts/{id}/withdrawals");

  // Each operation leads back to its section of the API docs.
  await page.getByRole("region", { name: "Operations" }).getByRole("link", { name: "POST /api/v1/accounts/{id}/withdrawals" }).click();
  await expect(page).toHaveURL(/\/docs#accounts_withdraw$/);
  await expect(page.getByRole("heading", { level: 2, name: "POST /api/v1/accounts/{id}/withdrawals", exact: true })).toBeInViewport();
});
