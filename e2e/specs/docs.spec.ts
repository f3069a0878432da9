/**
 * The API docs read as a page, not as a dump of the document: Markdown
 * rendered, problem types that lead to their pages, field tables instead of
 * JSON schema (so the currency codes appear once), a table of contents
 * and one example call per operation, taken from the document itself.
 */
import { expect, test } from "../fixtures";

type Operation = {
  parameters?: { in: string; name: string }[];
  requestBody?: { content: { "application/json": { example?: unknown } } };
  responses: Record<string, { content?: { "application/json"?: { example?: unknown } } }>;
};
type Document = { paths: Record<string, Record<string, Operation>> };

const operationsOf = (doc: Document) =>
  Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
  );

test.beforeEach(async ({ docsPage }) => {
  await docsPage.page.setViewportSize({ width: 1280, height: 900 });
  await docsPage.goto();
  await expect(docsPage.heading).toBeVisible();
});

test("renders the document's Markdown: no raw backticks anywhere in the text", async ({ docsPage }) => {
  // textContent, not innerText: the folded parts (answer fields, errors) count too.
  const text = await docsPage.page.getByRole("main").evaluate((main) => main.textContent ?? "");
  expect(text).toContain("Idempotent-Replayed: true");
  expect(text).not.toContain("`");
  await expect(
    docsPage.page
      .getByRole("main")
      .locator("code", { hasText: /^Idempotent-Replayed: true$/ })
      .first(),
  ).toBeVisible();
});

test("problem types are links to their pages, and every one of them answers", async ({ docsPage, page }) => {
  const errors = await docsPage.openErrors("POST", "/v1/accounts/{id}/withdrawals");
  const hrefs = await page
    .getByRole("main")
    .getByRole("link", { name: /^\/problems\// })
    .evaluateAll((links) => [...new Set(links.map((a) => a.getAttribute("href")))]);
  expect(hrefs.length).toBeGreaterThan(10);
  for (const href of hrefs) {
    expect(href).toMatch(/^\/docs\/problems\/[a-z0-9-]+$/);
    expect((await page.request.get(href ?? "")).status(), href ?? "").toBe(200);
  }

  await errors.getByRole("link", { name: "/problems/insufficient-funds", exact: true }).click();
  await expect(page).toHaveURL(/\/docs\/problems\/insufficient-funds$/);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("/problems/insufficient-funds");
});

test("fits a reasonable height at 1280 px: the currency codes are listed once, not per field", async ({ docsPage, page }) => {
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  expect(height).toBeLessThan(8000);

  const currency = docsPage
    .section("POST", "/v1/payments")
    .getByRole("row")
    .filter({ has: page.getByRole("cell", { name: "currency", exact: true }) });
  await expect(currency).toContainText(/One of the 1\d\d values of ISO 4217 currency code/);
  await currency.getByRole("link", { name: "ISO 4217 currency code" }).click();
  const list = page.getByRole("region", { name: "ISO 4217 currency code" });
  await expect(list).toBeInViewport();
  await expect(list.locator("code", { hasText: /^EUR$/ })).toHaveCount(1);
  await expect(page.getByRole("main").locator("code", { hasText: /^XTS$/ })).toHaveCount(1);
});

test("a table of contents leads to every operation's section", async ({ docsPage, page, request }) => {
  const operations = operationsOf((await (await request.get("/api/openapi.json")).json()) as Document);
  const links = docsPage.contents.getByRole("link");
  const hrefs = await links.evaluateAll((as) => as.map((a) => a.getAttribute("href") ?? ""));
  expect(hrefs.length).toBeGreaterThanOrEqual(operations.length);
  for (const href of hrefs) {
    expect(href).toMatch(/^#.+/);
    await expect(page.locator(`[id="${href.slice(1)}"]`), href).toHaveCount(1);
  }
  for (const { method, path } of operations)
    await expect(docsPage.contents.getByRole("link", { name: `${method} /api${path}`, exact: true })).toHaveCount(1);

  await docsPage.contents.getByRole("link", { name: "POST /api/v1/orders", exact: true }).click();
  await expect(page).toHaveURL(/#orders_create$/);
  await expect(docsPage.endpoint("POST", "/v1/orders")).toBeInViewport();
});

test("every operation has one example call and its answer, as the document gives them", async ({ docsPage, request }) => {
  const operations = operationsOf((await (await request.get("/api/openapi.json")).json()) as Document);
  expect(operations.length).toBeGreaterThan(15);
  for (const { method, path, op } of operations) {
    const call = docsPage.exampleRequest(method, path);
    await expect(call, `${method} ${path}`).toContainText(`curl${method === "GET" ? "" : ` -X ${method}`} "$BASE/api`);
    if (path.startsWith("/v1/") && path !== "/v1/webhooks/psp") await expect(call).toContainText('-H "Authorization: Bearer $TOKEN"');
    if (op.parameters?.some((p) => p.name === "Idempotency-Key")) await expect(call).toContainText("-H 'Idempotency-Key: ");
    const body = op.requestBody?.content["application/json"].example;
    if (body !== undefined) await expect(call).toContainText(`-d '${JSON.stringify(body)}'`);

    const [status, success] = Object.entries(op.responses).find(([s]) => s.startsWith("2")) ?? [];
    const answer = await docsPage.exampleAnswer(method, path).locator("code").textContent();
    const [first, ...json] = (answer ?? "").split("\n");
    expect(first, `${method} ${path}`).toBe(`HTTP ${status}`);
    expect(JSON.parse(json.join("\n"))).toEqual(success?.content?.["application/json"]?.example);
  }
});
