/**
 * A lab run the server refuses: anyone may start runs, so they are bounded
 * per minute (LAB_RUNS_PER_MINUTE). A server of its own allows 2, so a
 * scenario's two sides take both and the next run is refused at its
 * protected side. The page must say the run stopped, in the server's own
 * words, not that it finished.
 */
import { expect, test } from "@playwright/test";
import { LabPage } from "../pages/lab-page";
import { startOwnServer, type OwnServer } from "../support/own-server";

test.describe.configure({ timeout: 300_000 });

let server: OwnServer;
test.beforeAll(async () => {
  server = await startOwnServer("e2e_lab_refused", { LAB_RUNS_PER_MINUTE: "2" });
});
test.afterAll(async () => {
  await server?.stop();
});

test("a run past the per-minute limit stops and says why in plain words", async ({ browser }) => {
  const context = await browser.newContext({ baseURL: server.baseURL, viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const lab = new LabPage(page);
  await lab.goto();
  await lab.run("Provider 5xx, then success");
  await expect(lab.status).toHaveText(/^Finished “Provider 5xx, then success”\.$/, { timeout: 90_000 });
  await expect(page.locator(".error")).toHaveCount(0);

  await lab.runButton.click();
  await expect(lab.status).toHaveText(/^Stopped “Provider 5xx, then success”\.$/, { timeout: 90_000 });
  await expect(page.locator(".error")).toHaveText("At most 2 lab runs start per minute; try again shortly.");
  // Refused before anything ran: neither side shows a result.
  await expect(lab.side("protected").getByText("Waiting.")).toBeVisible();
  await expect(lab.side("naive").getByText("Waiting.")).toBeVisible();
  await context.close();
});
