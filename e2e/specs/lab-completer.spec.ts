/**
 * The lab's crash scenario with the completer on, in both orders (issue 25).
 * The worker stops dead right after the provider charged, its lease cut to
 * 2 s; the browser gives up after 1.5 s and retries 2.5 s later. Who
 * finishes the payment depends on the completer's round:
 * - every 0.5 s: the completer takes the key up as soon as the lease is out,
 *   before the browser is back; the retry gets its stored result replayed;
 * - every 60 s: the browser's retry comes first and takes the key over; the
 *   completer's first round, much later, finds nothing to do.
 * Either way one charge and one movement, the diagram draws who did it, and
 * the page says so in words. The shared e2e server runs without a
 * completer, so each order gets a server of its own here.
 */
import { expect, test } from "@playwright/test";
import { LabPage } from "../pages/lab-page";
import { startOwnServer, type OwnServer } from "../support/own-server";

const CRASH = "Worker crash right after the provider charged";

test.describe.configure({ mode: "serial", timeout: 300_000 });

for (const order of [
  { name: "completer first", intervalMs: 500, story: /^The completer came first/ },
  { name: "retry first", intervalMs: 60_000, story: /^The browser's retry came first/ },
] as const) {
  test.describe(`the crash scenario with the completer on: ${order.name}`, () => {
    let server: OwnServer;
    test.beforeAll(async () => {
      server = await startOwnServer(`e2e_lab_${order.name.replace(" ", "_")}`, { COMPLETER_INTERVAL_MS: String(order.intervalMs) });
    });
    test.afterAll(async () => {
      await server?.stop();
    });

    test(`one charge, the diagram and the page tell who finished it (${order.name})`, async ({ browser }) => {
      const context = await browser.newContext({ baseURL: server.baseURL, viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const lab = new LabPage(page);
      await lab.goto();
      await lab.run(CRASH);
      await expect(lab.status).toHaveText(/^Finished/, { timeout: 120_000 });

      const side = lab.side("protected");
      await expect(side.getByTestId("protected-verdict")).toHaveText("Exactly once.");
      await expect(lab.storyPart("protected", "key")).toHaveText(order.story);
      expect(await lab.count("protected", "provider-charges")).toBe("1");
      expect(await lab.count("protected", "charge-movements")).toBe("1");

      // The steps in the middleware's own terms, as the database records them.
      await lab.technicalView.check();
      const steps = await lab.steps("protected");
      const at = (pattern: RegExp) => steps.findIndex((s) => pattern.test(s));
      const crash = at(/^app → app: worker stops dead after the charge/);
      const takeover = at(/^app → database: key takeover, fence 2/);
      const movement = at(/^app → database: money moved: [\d.]+ \w+ from the card \(the provider owes it\) to the shop/);
      const retry = at(/^browser → app: request #2: checkout.pay/);
      const completer = at(/^completer → app: completer takes the key up/);
      expect(Math.min(crash, takeover, movement, retry)).toBeGreaterThanOrEqual(0);
      expect(steps.filter((s) => /^app → database: money moved/.test(s))).toHaveLength(1);
      expect(steps).toContainEqual(
        expect.stringMatching(/^provider → app: the provider answered 201 from its record of this key: no second charge$/),
      );
      if (order.name === "completer first") {
        // The completer's own lane: it took the key over and booked the movement before request #2 arrived, which is replayed.
        expect(completer).toBeGreaterThan(crash);
        expect(completer).toBeLessThan(takeover);
        expect(movement).toBeLessThan(retry);
        expect(steps).toContainEqual(expect.stringMatching(/^app → completer: result stored \(200\)/));
        expect(steps.slice(retry)).toContainEqual(expect.stringMatching(/^app → browser: answer to #2: 200 \(replayed\)$/));
      } else {
        expect(completer).toBe(-1);
        expect(retry).toBeLessThan(takeover);
        expect(takeover).toBeLessThan(movement);
        expect(steps).toContainEqual("app → browser: answer to #2: 200");
      }
      // The browser's list numbers the same requests: #1 timed out, #2 got the payment.
      const attempts = side.getByTestId("protected-attempts");
      await expect(attempts).toContainText("request #1: gave up waiting (client timeout)");
      await expect(attempts).toContainText(order.name === "completer first" ? "request #2: 200 replayed" : /request #2: 200(?! replayed)/);
      await context.close();
    });
  });
}
