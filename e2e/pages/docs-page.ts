/** The API docs page: a table of contents, then one section per REST endpoint, headed "<METHOD> /api<path>". */
import type { Locator, Page } from "@playwright/test";

export class DocsPage {
  readonly heading: Locator;
  readonly contents: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole("heading", { level: 1, name: "API docs" });
    this.contents = page.getByRole("navigation", { name: "Contents" });
  }

  async goto(): Promise<void> {
    await this.page.goto("/docs");
  }

  /** `path` as the OpenAPI document names it, e.g. "/v1/products"; the page shows it under /api. */
  endpoint(method: string, path: string): Locator {
    return this.page.getByRole("heading", { level: 2, name: `${method} /api${path}`, exact: true });
  }

  /** The endpoint's whole section. */
  section(method: string, path: string): Locator {
    return this.page.getByRole("region", { name: `${method} /api${path}`, exact: true });
  }

  exampleRequest(method: string, path: string): Locator {
    return this.section(method, path).getByRole("figure", { name: "Example request" });
  }

  exampleAnswer(method: string, path: string): Locator {
    return this.section(method, path).getByRole("figure", { name: "Example answer" });
  }

  /** The folded list of an endpoint's problem types, opened. */
  async openErrors(method: string, path: string): Promise<Locator> {
    const section = this.section(method, path);
    await section.getByText(/^Errors:/).click();
    return section.getByRole("group").filter({ hasText: /^Errors:/ });
  }
}
