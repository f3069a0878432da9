/** The home page: the hero with its heading and docs link, and the demo catalog table. */
import type { Locator, Page } from "@playwright/test";

export class HomePage {
  readonly heading: Locator;
  readonly docsLink: Locator;
  readonly catalogTable: Locator;
  /** Body rows only: the header row has column headers, not cells. */
  readonly productRows: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole("heading", { level: 1, name: "Exactly Once" });
    this.docsLink = page.getByRole("link", { name: "Read the API docs" });
    this.catalogTable = page.getByRole("region", { name: "The demo catalog" }).getByRole("table");
    this.productRows = this.catalogTable.getByRole("row").filter({ has: page.getByRole("cell") });
  }

  async goto(): Promise<void> {
    await this.page.goto("/");
  }

  /** The row whose product name is exactly `name` (a description mentioning it does not count). */
  rowFor(name: string): Locator {
    return this.productRows.filter({ has: this.page.getByText(name, { exact: true }) });
  }

  /** The product, SKU and price cells of the row for `name`, in column order. */
  cellsFor(name: string): { product: Locator; sku: Locator; price: Locator } {
    const cells = this.rowFor(name).getByRole("cell");
    return { product: cells.nth(0), sku: cells.nth(1), price: cells.nth(2) };
  }
}
