/**
 * The failure lab: pick a scenario, run it, read both sides' stories,
 * counts, payments and recorded steps, in plain words or (technical view)
 * in the middleware's terms.
 */
import type { Locator, Page } from "@playwright/test";

export type LabSide = "protected" | "naive";

export class LabPage {
  readonly runButton: Locator;
  readonly status: Locator;
  readonly technicalView: Locator;

  constructor(readonly page: Page) {
    this.runButton = page.getByRole("button", { name: /^Run/ });
    this.status = page.getByRole("status");
    this.technicalView = page.getByRole("checkbox", { name: /^Technical view/ });
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

  /** The run's story, one line per part: what the shopper did, what went wrong, what the key did, what it cost. */
  story(side: LabSide): Locator {
    return this.side(side).getByTestId(`${side}-story`);
  }

  storyPart(side: LabSide, part: "shopper" | "trouble" | "key" | "cost"): Locator {
    return this.side(side).getByTestId(`${side}-story-${part}`);
  }

  /** Every piece of text the diagram shows as it stands (the drawing's or the narrow list's, whichever is visible), with its legend. */
  async diagramTexts(side: LabSide): Promise<string[]> {
    const figure = this.side(side).getByRole("figure");
    return figure.evaluate((f) =>
      Array.from(f.querySelectorAll("svg text, li, dt, dd"))
        .filter((e) => (e as HTMLElement | SVGElement).getClientRects().length > 0)
        .map((e) => e.textContent ?? ""),
    );
  }

  /** The text equivalent of the sequence diagram, in the view shown (see technicalView): one "from → to: step" line per row. */
  async steps(side: LabSide): Promise<string[]> {
    // The table is folded away by default (a closed <details>): read it all the same.
    const rows = this.side(side).getByRole("table", { includeHidden: true }).getByRole("row", { includeHidden: true });
    const cells = await rows.evaluateAll((trs) =>
      trs.slice(1).map((tr) => Array.from(tr.querySelectorAll("td"), (td) => td.textContent ?? "")),
    );
    return cells.map(([, from, to, label]) => `${from} → ${to}: ${label}`);
  }
}
