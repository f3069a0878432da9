/** The API docs page: one section per REST endpoint, headed "<METHOD> /api<path>". */
import type { Locator, Page } from "@playwright/test";

export class DocsPage {
  readonly heading: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole("heading", { level: 1, name: "API docs" });
  }

  async goto(): Promise<void> {
    await this.page.goto("/docs");
  }

  /** `path` as the OpenAPI document names it, e.g. "/v1/products"; the page shows it under /api. */
  endpoint(method: string, path: string): Locator {
    return this.page.getByRole("heading", { level: 2, name: `${method} /api${path}`, exact: true });
  }
}
