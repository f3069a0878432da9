/**
 * The lab's "provider down for good" (issue 25), on the real stack: the
 * provider is unreachable for the run's calls, the shopper leaves, the
 * completer gives up after the lab's budget and the key needs attention;
 * the provider comes back, an operator follows the page's link to the key
 * in the admin and presses Resume now, and the lab counts again: one charge
 * at the provider and one ledger movement, checked in the database and at
 * the provider too. The twin's payment is left pending, never charged.
 */
import { expect, test } from "../fixtures";
import { AdminKeyPage, AdminPage } from "../pages/admin-page";
import { LabPage } from "../pages/lab-page";
import { expectNoAxeViolations } from "../support/axe";

test.describe.configure({ timeout: 120_000 });

test("lab: provider down for good — needs attention, then Resume now in the admin charges once", async ({
  page,
  context,
  db,
  provider,
}) => {
  const lab = new LabPage(page);
  await lab.goto();
  await lab.run("Provider down for good");
  await expect(lab.status).toHaveText(/^Finished/, { timeout: 90_000 });

  const side = lab.side("protected");
  const key = (await side.getByTestId("protected-key").textContent())!;
  await expect(side.getByTestId("protected-verdict")).toHaveText(
    "Not charged yet: the key needs attention, and an operator can finish it.",
  );
  await expect(side.getByTestId("attention-story")).toContainText("The key needs attention. The completer gave up after 3 attempts");
  expect(await lab.count("protected", "provider-charges")).toBe("0");
  await expect(lab.storyPart("protected", "cost")).toHaveText(/^Not charged; nothing booked\. The payment is pending, safe/);
  await expect(lab.storyPart("protected", "key")).toHaveText(/the completer tried 3 times, then gave up; it waits for an operator\.$/);
  const [stuck] = await db<{ state: string; attempts: number; gave_up: boolean }[]>`
    select state, completer_attempts as attempts, completer_gave_up_at is not null as gave_up from idempotency_keys where key = ${key}`;
  expect(stuck).toEqual({ state: "in_progress", attempts: 3, gave_up: true });
  // The steps in the middleware's own terms, as the database records them.
  await lab.technicalView.check();
  const steps = await lab.steps("protected");
  expect(steps.filter((s) => s.startsWith("completer → app: completer takes the key up"))).toHaveLength(3);
  expect(steps).toContainEqual("completer → app: completer gives up after 3 attempts: the key needs attention");
  expect(steps.at(-1)).toBe("provider → app: the provider is reachable again (simulated outage over)");
  await expect(lab.side("protected").getByTestId("protected-attempts")).toContainText("request #1: 503");
  await expectNoAxeViolations(page);
  // At 1280 px the page shows the run once: the steps' table, the diagram's twin, is folded away (both open: 5,821 px).
  await page.setViewportSize({ width: 1280, height: 900 });
  expect(await page.evaluate(() => document.documentElement.scrollHeight)).toBeLessThan(4_500);

  // The twin: no key, nothing to resume; its payment stays pending and is never charged.
  await expect(lab.storyPart("naive", "cost")).toHaveText(/^Not charged; nothing booked\. The payment is stuck as pending/);
  await expect(lab.storyPart("naive", "key")).toHaveText("No key: once the shopper left, nothing could pick the payment up again.");
  await expect(lab.side("naive").getByTestId("naive-verdict")).toHaveText(
    "Payment lost: left pending, with nothing that could ever finish it.",
  );
  const naiveIds = await lab.paymentIds("naive");
  expect(naiveIds).toHaveLength(1);
  expect(await db<{ status: string }[]>`select status from payments where id = ${naiveIds[0]!}`).toEqual([{ status: "pending" }]);

  // The operator: from the page's link to the key in the admin, Resume now.
  const [adminTab] = await Promise.all([context.waitForEvent("page"), side.getByRole("link", { name: `${key} in the admin` }).click()]);
  const admin = new AdminPage(adminTab);
  await admin.signIn();
  const keyPage = new AdminKeyPage(adminTab);
  await expect(adminTab.getByRole("heading", { level: 1 })).toHaveText(`Key ${key}`);
  await expect(keyPage.fields).toContainText("Needs attention");
  await adminTab.getByRole("button", { name: "Resume now…" }).click();
  await adminTab.getByRole("button", { name: "Resume", exact: true }).click();
  await expect(adminTab.getByTestId("resume-result")).toHaveText("Resume now: Completed by the completer (status 200).");
  await adminTab.close();

  // Back in the lab: counted again, from the provider's records and the ledger.
  await side.getByRole("button", { name: "Count again" }).click();
  await expect(side.getByTestId("protected-verdict")).toHaveText("Exactly once.");
  await expect(lab.storyPart("protected", "cost")).toHaveText("Charged once; booked once in the shop's books.");
  await expect(lab.storyPart("protected", "key")).toHaveText(
    /the completer gave up, and an operator's Resume now finished it with the same key\.$/,
  );
  await expect(side.getByTestId("attention-story")).toContainText("Finished: the key is no longer in progress.");
  await expect(side.getByTestId("protected-provider-charges")).toHaveText("1");
  await expect(side.getByTestId("protected-charge-movements")).toHaveText("1");

  const paymentIds = await lab.paymentIds("protected");
  expect(paymentIds).toHaveLength(1);
  const [ledger] = await db<{ movements: number }[]>`
    select count(distinct transaction_id)::int as movements from ledger_entries where payment_id = ${paymentIds[0]!} and ledger_account = 'sales' and direction = 'credit'`;
  expect(ledger?.movements).toBe(1);
  const charges = await provider.charges();
  expect(charges.filter((c) => c.reference === paymentIds[0])).toHaveLength(1);
  expect(charges.filter((c) => c.reference === naiveIds[0])).toHaveLength(0);
  expect(await db<{ state: string; completed_by: string }[]>`select state, completed_by from idempotency_keys where key = ${key}`).toEqual([
    { state: "completed", completed_by: "completer" },
  ]);
});
