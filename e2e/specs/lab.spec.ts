/**
 * The failure lab, on the real stack (the e2e server runs the run command
 * with its demo secrets, so demo mode is on). Every scenario runs through the
 * protected checkout and the unprotected twin; the counts the page shows
 * come from the provider's records and the ledger, and are checked again
 * here in the database. The diagram is checked through its text equivalent.
 */
import type { Sql } from "postgres";
import { expect, test } from "../fixtures";
import { LabPage } from "../pages/lab-page";
import { expectNoAxeViolations } from "../support/axe";

// A run plays real waits (the slow provider, a crash's lease) twice, once per side, and axe reads a long page.
test.describe.configure({ timeout: 120_000 });

type Expected = {
  title: string;
  /** What the twin really does in this scenario. */
  naive: { charges: number; movements: number; refundMovements?: number };
  /** Steps of the protected run that show why it charged once. */
  protectedSteps: RegExp[];
  naiveSteps: RegExp[];
  /** Duplicates that arrive while the first request is at the (slow) provider: each waits for the key, then replays. */
  waiting?: number;
};

const WAITED = /^app → database: waited \d+ ms for the key$/;

const SCENARIOS: Expected[] = [
  {
    title: "Double-click on Pay",
    naive: { charges: 2, movements: 2 },
    protectedSteps: [/browser → app: request #2: checkout.pay with key/, WAITED, /^app → database: key replayed/],
    waiting: 1,
    naiveSteps: [/request #2: lab.naivePay without a key/],
  },
  {
    title: "Five impatient clicks",
    naive: { charges: 5, movements: 5 },
    protectedSteps: [/request #5: checkout.pay/, WAITED, /^app → database: key replayed/],
    waiting: 4,
    naiveSteps: [/request #5: lab.naivePay without a key/],
  },
  {
    title: "Two tabs, one cart",
    naive: { charges: 2, movements: 2 },
    protectedSteps: [/request #2: checkout.pay/, WAITED, /^app → database: key replayed/],
    waiting: 1,
    naiveSteps: [/request #2: lab.naivePay/],
  },
  {
    title: "Answer lost after the server committed",
    naive: { charges: 2, movements: 2 },
    protectedSteps: [
      /app → browser: answer to #1 \(200\) lost on the way \(simulated\)/,
      /app → database: key replayed/,
      /app → browser: answer to #2: 200 \(replayed\)/,
    ],
    naiveSteps: [/answer to #1 \(200\) lost on the way/, /answer to #2: 200$/],
  },
  {
    title: "Client timeout on a slow provider",
    naive: { charges: 2, movements: 2 },
    protectedSteps: [/request #2: checkout.pay/, WAITED, /^app → database: key replayed/],
    waiting: 1,
    naiveSteps: [/request #2: lab.naivePay/],
  },
  {
    title: "Provider 5xx, then success",
    naive: { charges: 1, movements: 1 },
    protectedSteps: [/provider → app: the provider answered 500$/, /provider → app: the provider answered 201$/],
    naiveSteps: [/provider → app: the provider answered 500$/, /provider → app: the provider answered 201$/],
  },
  {
    title: "Worker crash right after the provider charged",
    naive: { charges: 2, movements: 1 },
    protectedSteps: [
      /app → app: worker stops dead after the charge \(simulated crash\)/,
      /app → database: key takeover, fence 2/,
      /app → database: phase "placed" skipped: committed by an earlier attempt/,
      /provider → app: the provider answered 201 from its record of this key/,
      /app → database: phase "charged" committed/,
    ],
    naiveSteps: [/worker stops dead/, /request #2: lab.naivePay/],
  },
  {
    title: "The same webhook delivered twice at once",
    naive: { charges: 1, movements: 1, refundMovements: 2 },
    protectedSteps: [/applied once, its id recorded/, /recognised as a duplicate: nothing applied/],
    naiveSteps: [/applied \(the twin keeps no record of events\)/],
  },
];

/** Ledger movements, read with SQL: charge movements credit sales, refund movements debit refunds. */
async function movements(db: Sql, paymentIds: string[]) {
  const [row] = await db<{ charges: number; refunds: number }[]>`
    select count(distinct transaction_id) filter (where ledger_account = 'sales' and direction = 'credit')::int as charges,
           count(distinct transaction_id) filter (where ledger_account = 'refunds' and direction = 'debit')::int as refunds
    from ledger_entries where payment_id = any(${paymentIds})`;
  return row!;
}

for (const scenario of SCENARIOS) {
  test(`lab: ${scenario.title} — one charge protected, the real count without a key`, async ({ page, db, provider }) => {
    const lab = new LabPage(page);
    await lab.goto();
    await lab.run(scenario.title);
    await expect(lab.status).toHaveText(/^Finished/, { timeout: 90_000 });
    // The steps below are matched in the middleware's own terms, as the database records them.
    await lab.technicalView.check();

    // Protected: one payment under the run's key, one provider charge, one ledger movement.
    const key = (await lab.side("protected").getByTestId("protected-key").textContent())!;
    const protectedIds = await lab.paymentIds("protected");
    const rows = await db<{ id: string }[]>`select id from payments where idempotency_key = ${key}`;
    expect(rows.map((r) => r.id)).toEqual(protectedIds);
    expect(protectedIds).toHaveLength(1);
    expect(await lab.count("protected", "provider-charges")).toBe("1");
    expect(await lab.count("protected", "charge-movements")).toBe("1");
    expect((await movements(db, protectedIds)).charges).toBe(1);

    // The twin: what it really did, on the page and in the database.
    const naiveIds = await lab.paymentIds("naive");
    expect(await lab.count("naive", "provider-charges")).toBe(String(scenario.naive.charges));
    expect(await lab.count("naive", "charge-movements")).toBe(String(scenario.naive.movements));
    const naiveLedger = await movements(db, naiveIds);
    expect(naiveLedger.charges).toBe(scenario.naive.movements);

    // And at the provider itself, from its own records (the app sends the payment id as the charge's reference).
    const charges = await provider.charges();
    const chargedFor = (ids: string[]) => charges.filter((c) => c.reference !== null && ids.includes(c.reference));
    expect(chargedFor(protectedIds)).toHaveLength(1);
    expect(chargedFor(naiveIds)).toHaveLength(scenario.naive.charges);

    if (scenario.naive.refundMovements !== undefined) {
      expect(chargedFor(protectedIds).flatMap((c) => c.refunds)).toHaveLength(1);
      expect(chargedFor(naiveIds).flatMap((c) => c.refunds)).toHaveLength(1);
      expect(await lab.count("protected", "refunds")).toBe("1 / 1");
      expect((await movements(db, protectedIds)).refunds).toBe(1);
      expect(await lab.count("naive", "refunds")).toBe(`1 / ${scenario.naive.refundMovements}`);
      expect(naiveLedger.refunds).toBe(scenario.naive.refundMovements);
    }

    // The diagram's text equivalent names every step that matters, in recorded order.
    const protectedSteps = await lab.steps("protected");
    expect(protectedSteps[0]).toMatch(/^browser → app: request #1: checkout.pay with key/);
    expect(protectedSteps).toContainEqual(expect.stringMatching(/^app → database: key claimed, fence 1/));
    expect(protectedSteps).toContainEqual(expect.stringMatching(/^app → database: phase "placed" committed \(recovery point\)/));
    expect(protectedSteps).toContainEqual(expect.stringMatching(/^app → provider: asks the provider to charge the card, key /));
    expect(protectedSteps).toContainEqual(
      expect.stringMatching(/^app → database: money moved: [\d.]+ \w+ from the card \(the provider owes it\) to the shop \(ledger\)$/),
    );
    for (const step of scenario.protectedSteps) expect(protectedSteps).toContainEqual(expect.stringMatching(step));
    if (scenario.waiting !== undefined) {
      // Every duplicate waited for the key while the first was at the provider, and then got the stored answer: waits come before replays.
      const waits = protectedSteps.flatMap((step, i) => (WAITED.test(step) ? [i] : []));
      const replays = protectedSteps.flatMap((step, i) => (/^app → browser: answer to #\d+: 200 \(replayed\)$/.test(step) ? [i] : []));
      expect(waits.length).toBeGreaterThanOrEqual(scenario.waiting);
      expect(replays).toHaveLength(scenario.waiting);
      expect(Math.min(...waits)).toBeLessThan(protectedSteps.findIndex((step) => /^app → database: key replayed/.test(step)));
      expect(protectedSteps.filter((step) => /^app → database: key conflict/.test(step))).toEqual([]);
    }
    const naiveSteps = await lab.steps("naive");
    for (const step of scenario.naiveSteps) expect(naiveSteps).toContainEqual(expect.stringMatching(step));
    const times = (await lab
      .side("protected")
      .getByRole("table", { includeHidden: true })
      .getByRole("row", { includeHidden: true })
      .evaluateAll((trs) => trs.slice(1).map((tr) => Number(tr.querySelector("td")?.textContent)))) as number[];
    expect(times).toEqual([...times].sort((a, b) => a - b));

    // Each recorded step is shown: as many rows (and arrows) as the run has steps in the database, in the same order.
    const recorded = async (runId: string) =>
      (
        await db<
          { step: string }[]
        >`select from_lane || ' → ' || to_lane || ': ' || label as step from lab_steps where run_id = ${runId} order by at_ms, seq, id`
      ).map((r) => r.step);
    expect(protectedSteps).toEqual(await recorded(key.slice("lab-".length)));
    const [naiveRun] = await db<{ id: string }[]>`select id from lab_runs where naive_payment_ids && ${naiveIds}::text[]`;
    expect(naiveSteps).toEqual(await recorded(naiveRun!.id));
    for (const side of ["protected", "naive"] as const) {
      await expect(lab.side(side).getByRole("img")).toHaveAttribute(
        "aria-label",
        new RegExp(`sequence diagram, ${(await lab.steps(side)).length} steps;`),
      );
      // The browser's list and the diagram number the same requests: every request the browser sent arrived under its number,
      // and every answer the browser got is the one the diagram drew for that number.
      const attempts = await lab.attempts(side);
      const steps = await lab.steps(side);
      const numbers = (lines: string[], pattern: RegExp) =>
        lines
          .flatMap((line) => line.match(pattern)?.[1] ?? [])
          .map(Number)
          .sort((a, b) => a - b);
      expect(numbers(steps, /^browser → app: request #(\d+):/), side).toEqual(numbers(attempts, /request #(\d+): sent$/));
      for (const line of attempts) {
        const answer = line.match(/request #(\d+): (\d{3})( replayed)?$/);
        if (answer) expect(steps, line).toContain(`app → browser: answer to #${answer[1]}: ${answer[2]}${answer[3] ? " (replayed)" : ""}`);
      }
    }
  });
}

test("lab: the diagram reads without code: lane labels apart, a wait drawn from start to end, a legend of what this run shows, the table folded", async ({
  page,
}) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  const lab = new LabPage(page);
  await lab.goto();
  await lab.run("Double-click on Pay");
  await expect(lab.status).toHaveText(/^Finished/, { timeout: 90_000 });
  const side = lab.side("protected");
  // Lane labels: no two overlap (they once ran into each other: "browsercompleter").
  const labels = await side.getByRole("img").evaluate((svg) =>
    Array.from(svg.querySelectorAll("g > text[font-weight='700']"), (t) => {
      const box = (t as SVGGraphicsElement).getBBox();
      return { name: t.textContent, left: box.x, right: box.x + box.width, top: box.y, bottom: box.y + box.height };
    }),
  );
  expect(labels.map((l) => l.name)).toEqual(["browser", "shop", "database", "provider"]);
  type Box = (typeof labels)[number];
  const apart = (a: Box, b: Box) => a.right + 4 < b.left || b.right + 4 < a.left || a.bottom < b.top || b.bottom < a.top;
  for (const a of labels) for (const b of labels) if (a !== b) expect(apart(a, b), `${a.name} | ${b.name}`).toBe(true);
  // The whole diagram, step words included, fits its half of the page: nothing hides behind a scroll bar.
  expect(await side.locator(".sequence-scroll").evaluate((d) => d.scrollWidth - d.clientWidth)).toBeLessThanOrEqual(0);
  // The duplicate's wait is a bar from where it began down over the steps it waited for, not a point.
  const bars = await side.locator("rect.sequence-wait").evaluateAll((rects) => rects.map((r) => Number(r.getAttribute("height"))));
  expect(bars.length).toBeGreaterThanOrEqual(1);
  expect(Math.max(...bars)).toBeGreaterThan(40);
  // The legend explains what this run shows, nothing else: a wait and safe points, no completer; in the technical view,
  // fences and recovery points (and the lanes their own names).
  const legend = side.getByRole("definition").locator("xpath=..").locator("dt");
  await expect(legend).toContainText(["a yellow bar", "a safe point"]);
  await expect(side.getByText("purple arrows", { exact: true })).toHaveCount(0);
  await expect(side.getByText(/^(fence N|recovery point)$/)).toHaveCount(0);
  await lab.technicalView.check();
  await expect(legend).toContainText(["a yellow bar", "fence N", "recovery point"]);
  await expect(side.getByText("a safe point", { exact: true })).toHaveCount(0);
  await expect(side.getByRole("img").locator("g > text[font-weight='700']")).toHaveText(["browser", "app", "database", "provider"]);
  await lab.technicalView.uncheck();
  // The text table is there, folded away until asked for.
  await expect(side.locator("details.steps-details")).not.toHaveAttribute("open");
  await expect(side.getByRole("table")).toBeHidden();
  await side.getByText(/^Every step as text/).click();
  await expect(side.getByRole("table")).toBeVisible();
});

test("lab: reached from the home page in demo mode; no accessibility violations, with a run's results shown", async ({ page }) => {
  const lab = new LabPage(page);
  await page.goto("/");
  await page.getByRole("link", { name: "Run the failure lab" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Failure lab" })).toBeVisible();
  await lab.run("Double-click on Pay");
  await expect(lab.status).toHaveText(/^Finished/, { timeout: 90_000 });
  await expectNoAxeViolations(page);
});
