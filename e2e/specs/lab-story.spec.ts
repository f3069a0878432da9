/**
 * The lab for someone who has never heard of an idempotency key (issue 58),
 * every scenario on the real stack, at a phone's width and a laptop's: each
 * run tells its story first, in plain words that agree with what the run
 * counted; the diagram's default view names no fence, phase or lease and
 * shows no hash (the technical view still does); a wait is drawn after the
 * call it waited for; and the page fits both screens, the steps reading top
 * to bottom on the phone with no word cut off in an inner scroller.
 */
import { expect, test } from "../fixtures";
import { LAB_SCENARIOS } from "../../server/lab/scenarios";
import { LabPage, type LabSide } from "../pages/lab-page";
import { expectPageFits, LAPTOP, PHONE } from "../support/fit";

// A run plays real waits (the slow provider, a crash's lease, the completer's rounds) once per side, and axe reads a long page twice.
test.describe.configure({ timeout: 150_000 });

const DEVELOPER_TERMS = /fence|phase|lease/i;
/** A hash or a generated key in a label: the downstream key's first 12 hex digits, a UUID's head, or a longer run of hex. */
const HASH = /[0-9a-f]{12,}|[0-9a-f]{8}-[0-9a-f]{3}/;

const SIDES: LabSide[] = ["protected", "naive"];

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The story's cost, as the provider's count says it must read. */
const costFor = (charges: number) =>
  charges === 0 ? /^Not charged/ : charges === 1 ? /^Charged once/ : new RegExp(`^Charged ${charges} times`);

for (const scenario of LAB_SCENARIOS) {
  test(`lab story: ${scenario.title} — told in plain words, fits a phone and a laptop`, async ({ page }, testInfo) => {
    await page.setViewportSize(PHONE);
    const lab = new LabPage(page);
    await lab.goto();
    await lab.run(scenario.title);
    await expect(lab.status).toHaveText(/^Finished/, { timeout: 120_000 });
    await expect(lab.technicalView).not.toBeChecked();

    for (const side of SIDES) {
      // The story comes first, all four parts, and says what the run counted.
      const story = lab.story(side);
      await expect(story).toBeVisible();
      const first = await lab.side(side).evaluate((section) => section.querySelector("h2 + *")?.getAttribute("data-testid"));
      expect(first, `${side}: the story opens the card`).toBe(`${side}-story`);
      await expect(lab.storyPart(side, "shopper")).toHaveText(
        new RegExp(`^${escaped(scenario.shopper)}\\. The browser sent \\d+ payment requests?`),
      );
      for (const part of ["trouble", "key"] as const) await expect(lab.storyPart(side, part)).toHaveText(/\w/);
      const charges = Number(await lab.count(side, "provider-charges"));
      await expect(lab.storyPart(side, "cost")).toHaveText(costFor(charges));
      const sent = (await lab.attempts(side)).filter((line) => /request #\d+: sent$/.test(line)).length;
      await expect(lab.storyPart(side, "shopper")).toContainText(`The browser sent ${sent} payment request`);
      await testInfo.attach(`${side} story`, { body: (await story.innerText()).trim(), contentType: "text/plain" });

      // The default view: plain words in the drawing (or the list), the legend, the steps' text and the story.
      const plain = [...(await lab.diagramTexts(side)), ...(await lab.steps(side)), (await story.textContent()) ?? ""];
      expect(plain.length).toBeGreaterThan(4);
      expect(
        plain.filter((text) => DEVELOPER_TERMS.test(text) || HASH.test(text)),
        `${side}: developer terms or hashes`,
      ).toEqual([]);
    }
    // Nowhere else on the page either (\b: "release" and "please" are plain English).
    expect(await page.locator("main").innerText()).not.toMatch(/\b(fence|phase|lease)/i);

    // On the phone the steps read as a list, top to bottom, every word inside its box.
    for (const side of SIDES) {
      const figure = lab.side(side).getByRole("figure");
      await expect(figure.getByRole("img")).toBeHidden();
      await expect(figure.getByRole("listitem").first()).toBeVisible();
      const cut = await figure.evaluate((f) =>
        Array.from(f.querySelectorAll<HTMLElement>("*"))
          .filter((e) => e.getClientRects().length > 0 && e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 1)
          .map((e) => `${e.tagName}: ${e.textContent?.slice(0, 60)}`),
      );
      expect(cut, `${side}: boxes whose words overflow`).toEqual([]);
    }
    await expectPageFits(page, `${scenario.title} at ${PHONE.width} px`);

    await page.setViewportSize(LAPTOP);
    for (const side of SIDES) {
      const drawing = lab.side(side).getByRole("img");
      await expect(drawing).toBeVisible();
      // The drawing fits its card: nothing hides behind a scroll bar.
      expect(await drawing.evaluate((svg) => svg.parentElement!.scrollWidth - svg.parentElement!.clientWidth)).toBeLessThanOrEqual(0);
      const texts = await lab.diagramTexts(side);
      expect(
        texts.filter((text) => DEVELOPER_TERMS.test(text) || HASH.test(text)),
        `${side} at 1280 px`,
      ).toEqual([]);
    }
    await expectPageFits(page, `${scenario.title} at ${LAPTOP.width} px`);

    // The technical view still has the developer's terms, and each wait comes after the provider call it waited for.
    await lab.technicalView.check();
    const steps = await lab.steps("protected");
    expect(steps).toContainEqual(expect.stringMatching(/^app → database: key claimed, fence 1/));
    const waits = steps.flatMap((step, i) => (/: waited \d+ ms for the key$/.test(step) ? [i] : []));
    const firstAnswer = steps.findIndex((step) => /^provider → app: the provider (answered|did not answer)/.test(step));
    for (const wait of waits) expect(wait, steps.join("\n")).toBeGreaterThan(firstAnswer);
    const times = (await lab
      .side("protected")
      .getByRole("table", { includeHidden: true })
      .getByRole("row", { includeHidden: true })
      .evaluateAll((trs) => trs.slice(1).map((tr) => Number(tr.querySelector("td")?.textContent)))) as number[];
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });
}
