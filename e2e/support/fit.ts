/**
 * The check every page gets at a phone's width and a laptop's: nothing makes
 * the page itself scroll sideways (a wide table scrolls inside its own box,
 * or becomes cards), and axe finds nothing.
 */
import { expect, type Page } from "@playwright/test";
import { expectNoAxeViolations } from "./axe";

export const PHONE = { width: 390, height: 844 } as const;
export const LAPTOP = { width: 1280, height: 800 } as const;

export async function expectPageFits(page: Page, label: string): Promise<void> {
  const { scrollWidth, viewport } = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
  }));
  expect(scrollWidth, `${label}: the page's width at ${viewport} px`).toBeLessThanOrEqual(viewport);
  await expectNoAxeViolations(page);
}
