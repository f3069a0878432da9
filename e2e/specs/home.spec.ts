/** The home page: the catalog as the database holds it, the way to the API docs, and accessibility. */
import { randomUUID } from "node:crypto";
import { expect, test } from "../fixtures";
import { expectNoAxeViolations } from "../support/axe";

test("shows every product of the catalog with its price", async ({ homePage, catalog }) => {
  await homePage.goto();

  await expect(homePage.productRows).toHaveCount(catalog.length);
  for (const product of catalog) {
    const cells = homePage.cellsFor(product.name);
    await expect(cells.product).toContainText(product.description);
    await expect(cells.sku).toHaveText(product.sku);
    await expect(cells.price).toHaveText(`${product.price} ${product.currency}`);
  }
});

test("reads the catalog from the database on every request", async ({ homePage, catalogEditor }) => {
  const [product] = catalogEditor.products;
  if (!product) throw new Error("The seeded catalog is empty.");
  const renamed = `${product.name} (e2e ${randomUUID().slice(0, 8)})`;

  await homePage.goto();
  await expect(homePage.cellsFor(product.name).sku).toHaveText(product.sku);

  await catalogEditor.rename(product.sku, renamed);
  await homePage.page.reload();

  await expect(homePage.cellsFor(renamed).sku).toHaveText(product.sku);
  await expect(homePage.rowFor(product.name)).toHaveCount(0);
});

test("links to the API docs, which list GET /api/v1/products", async ({ homePage, docsPage }) => {
  await homePage.goto();
  await expect(homePage.heading).toBeVisible();

  await homePage.docsLink.click();

  await expect(homePage.page).toHaveURL(/\/docs$/);
  await expect(docsPage.heading).toBeVisible();
  await expect(docsPage.endpoint("GET", "/v1/products")).toBeVisible();
});

for (const path of ["/", "/docs"]) {
  test(`has no accessibility violations on ${path}`, async ({ page }) => {
    await page.goto(path);
    await expect(page.getByRole("heading", { level: 1 })).toBeVisible();

    await expectNoAxeViolations(page);
  });
}
