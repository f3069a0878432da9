/** A page fits its viewport: nothing makes the page itself scroll sideways (a wide table scrolls inside its own box). */
import { expect, type Page } from "@playwright/test";

export async function expectFitsViewport(page: Page): Promise<void> {
  const {
    page: width,
    viewport,
    widest,
  } = await page.evaluate(() => {
    const root = document.documentElement;
    // The element that reaches furthest right, to name it when the page overflows.
    let widest = "";
    let right = root.clientWidth;
    for (const el of Array.from(document.body.querySelectorAll("*"))) {
      const r = el.getBoundingClientRect().right;
      if (r > right + 1) {
        right = r;
        widest = `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}${el.className && typeof el.className === "string" ? `.${el.className.trim().split(/\s+/).join(".")}` : ""} (${Math.round(r)} px)`;
      }
    }
    return { page: root.scrollWidth, viewport: root.clientWidth, widest };
  });
  expect(width, `the page is ${width} px wide in a ${viewport} px viewport; widest: ${widest}`).toBeLessThanOrEqual(viewport);
}
