/**
 * The product catalog as the database holds it, shaped the way the API and
 * the home page present it, and a lock that keeps a test which edits the
 * shared catalog from running while another compares against it.
 */
import type { ReservedSql, Sql } from "postgres";

export type CatalogProduct = { sku: string; name: string; description: string; price: string; currency: string };

/** Any constant works; it only has to differ from the app's own advisory locks. */
const CATALOG_LOCK = 7_313_900;

/** Minor units to the decimal string of the API ("4.50"), computed here rather than borrowed from the app. */
const decimal = (minor: number) => (minor / 100).toFixed(2);

/** In the API's order: cheapest first, then by SKU. */
export async function readCatalog(sql: Sql | ReservedSql): Promise<CatalogProduct[]> {
  const rows = await sql<{ sku: string; name: string; description: string; price_minor: string; currency: string }[]>`
    select sku, name, description, price_minor, currency from products order by price_minor, sku`;
  return rows.map((r) => ({
    sku: r.sku,
    name: r.name,
    description: r.description,
    price: decimal(Number(r.price_minor)),
    currency: r.currency,
  }));
}

/**
 * Runs `run` on one connection that holds the catalog lock: shared for tests
 * that only read the catalog, exclusive for a test that changes it.
 */
export async function withCatalogLock<T>(db: Sql, mode: "shared" | "exclusive", run: (connection: ReservedSql) => Promise<T>): Promise<T> {
  const connection = await db.reserve();
  try {
    if (mode === "shared") await connection`select pg_advisory_lock_shared(${CATALOG_LOCK})`;
    else await connection`select pg_advisory_lock(${CATALOG_LOCK})`;
    try {
      return await run(connection);
    } finally {
      if (mode === "shared") await connection`select pg_advisory_unlock_shared(${CATALOG_LOCK})`;
      else await connection`select pg_advisory_unlock(${CATALOG_LOCK})`;
    }
  } finally {
    connection.release();
  }
}
