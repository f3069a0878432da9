/**
 * The e2e test API: Playwright's `test` extended with the run's database, a
 * fresh tenant per test, an API client authenticated as that tenant, the
 * catalog as the database holds it, and the page objects.
 */
import { readFileSync } from "node:fs";
import { test as base, expect, type APIRequestContext } from "@playwright/test";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres, { type Sql } from "postgres";
import * as schema from "../db/schema";
import { chargeListSchema, type ChargeWithRefunds } from "../server/psp/schemas";
import { createTenant } from "../server/tenants/service";
import { DocsPage } from "./pages/docs-page";
import { HomePage } from "./pages/home-page";
import { readCatalog, withCatalogLock, type CatalogProduct } from "./support/catalog";
import { DATABASE_URL_FILE, PSP_URL_FILE } from "./support/settings";

export type E2eTenant = { id: string; name: string; token: string };

/** For the one kind of test that changes the shared catalog; every change is undone after the test. */
export type CatalogEditor = {
  /** The catalog before any change, as `catalog` would give it. */
  products: CatalogProduct[];
  rename(sku: string, name: string): Promise<void>;
};

type TestFixtures = {
  /** A tenant of its own for every test, created the way the tenant CLI does. */
  tenant: E2eTenant;
  /** Requests to the app under test with `Authorization: Bearer <tenant token>`. */
  api: APIRequestContext;
  /**
   * The catalog, read under a shared lock held for the whole test, so no
   * `catalogEditor` test changes it in between. Never combine the two in one test.
   */
  catalog: CatalogProduct[];
  catalogEditor: CatalogEditor;
  homePage: HomePage;
  docsPage: DocsPage;
};

type WorkerFixtures = {
  /** The database the app under test runs on (see e2e/serve.ts). */
  db: Sql;
  /** The provider stand-in the app under test charges: its own record of charges. */
  provider: { charges(): Promise<ChargeWithRefunds[]> };
};

// The second parameter is Playwright's `use`, named `provide` here because
// eslint-plugin-react-hooks takes any call to `use` for React's hook.
export const test = base.extend<TestFixtures, WorkerFixtures>({
  db: [
    // Playwright reads a fixture's dependencies from this pattern; the client needs none.
    // eslint-disable-next-line no-empty-pattern
    async ({}, provide) => {
      const client = postgres(readFileSync(DATABASE_URL_FILE, "utf8").trim(), { max: 4, onnotice: () => {} });
      await provide(client);
      await client.end({ timeout: 5 });
    },
    { scope: "worker" },
  ],

  provider: [
    // eslint-disable-next-line no-empty-pattern
    async ({}, provide) => {
      const url = readFileSync(PSP_URL_FILE, "utf8").trim();
      await provide({
        async charges() {
          const res = await fetch(`${url}/charges`);
          expect(res.status).toBe(200);
          return chargeListSchema.parse(await res.json()).data;
        },
      });
    },
    { scope: "worker" },
  ],

  tenant: async ({ db }, provide, testInfo) => {
    const { tenant, token } = await createTenant(drizzle({ client: db, schema }), `E2E ${testInfo.title}`);
    await provide({ ...tenant, token });
  },

  api: async ({ playwright, baseURL, tenant }, provide) => {
    const context = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { authorization: `Bearer ${tenant.token}` } });
    await provide(context);
    await context.dispose();
  },

  catalog: async ({ db }, provide) => {
    await withCatalogLock(db, "shared", async (connection) => provide(await readCatalog(connection)));
  },

  catalogEditor: async ({ db }, provide) => {
    await withCatalogLock(db, "exclusive", async (connection) => {
      const products = await readCatalog(connection);
      const originals = new Map<string, string>();
      try {
        await provide({
          products,
          rename: async (sku, name) => {
            const [row] = await connection<{ name: string }[]>`select name from products where sku = ${sku}`;
            if (!row) throw new Error(`No product with SKU ${sku} to rename.`);
            if (!originals.has(sku)) originals.set(sku, row.name);
            await connection`update products set name = ${name} where sku = ${sku}`;
          },
        });
      } finally {
        for (const [sku, name] of originals) await connection`update products set name = ${name} where sku = ${sku}`;
      }
    });
  },

  homePage: async ({ page }, provide) => {
    await provide(new HomePage(page));
  },

  docsPage: async ({ page }, provide) => {
    await provide(new DocsPage(page));
  },
});

export { expect };
