/** The failure lab: pick a scenario, run it, read both sides' counts, payments and recorded steps. */
import type { Locator, Page } from "@playwright/test";

export type LabSide = "protected" | "naive";

export class LabPage {
  readonly runButton: Locator;
  readonly status: Locator;

  constructor(readonly page: Page) {
    this.runButton = page.getByRole("button", { name: /^Run/ });
    this.status = page.getByRole("status");
  }

  async goto(): Promise<void> {
    await this.page.goto("/lab");
  }

  async run(title: string): Promise<void> {
    await this.page.getByRole("radio", { name: new RegExp(`^${title}`) }).check();
    await this.runButton.click();
  }

  side(side: LabSide): Locator {
    return this.page.getByRole("region", { name: side === "protected" ? /^Protected checkout/ : /^Unprotected twin/ });
  }

  async count(side: LabSide, what: "provider-charges" | "charge-movements" | "payments" | "refunds"): Promise<string> {
    return (await this.side(side).getByTestId(`${side}-${what}`).textContent()) ?? "";
  }

  async paymentIds(side: LabSide): Promise<string[]> {
    const text = (await this.side(side).getByTestId(`${side}-payment-ids`).textContent()) ?? "";
    return text === "none" ? [] : text.split(" ");
  }

  /** The browser's own attempts list, one line per entry. */
  async attempts(side: LabSide): Promise<string[]> {
    return this.side(side).getByTestId(`${side}-attempts`).getByRole("listitem").allTextContents();
  }

  /** The text equivalent of the sequence diagram: one "from → to: step" line per row. */
  async steps(side: LabSide): Promise<string[]> {
    // The table is folded away by default (a closed <details>): read it all the same.
    const rows = this.side(side).getByRole("table", { includeHidden: true }).getByRole("row", { includeHidden: true });
    const cells = await rows.evaluateAll((trs) =>
      trs.slice(1).map((tr) => Array.from(tr.querySelectorAll("td"), (td) => td.textContent ?? "")),
    );
    return cells.map(([, from, to, label]) => `${from} → ${to}: ${label}`);
  }
}
