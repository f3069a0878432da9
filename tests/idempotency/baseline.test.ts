/**
 * The package's migrations against the key table the app's own migrations
 * built before the package existed (db/migrations 0000–0010, and 0012's
 * trace id, which the package's 0001 adds too):
 * on such a database they change nothing, and on an empty one they build the
 * identical table — compared in the catalog: columns in order with their
 * types, nullability and defaults, constraints, indexes, storage parameters.
 * Also: a second run applies nothing, a schema of the app's choosing gets
 * the same table, and `pendingMigrations` names what a run would apply.
 */
import { migrate as migrateKeyTable, pendingMigrations } from "@exactly-once/trpc";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate as migrateApp } from "drizzle-orm/postgres-js/migrator";
import postgres, { type Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { migrationsFolder } from "../../db/migrate";

const serverUrl = inject("directDatabaseUrl");
/** The package's migrations, in the order it applies them: the baseline and the key row's trace id (the app's 0012 added it too). */
const PACKAGE_MIGRATIONS = ["0000_baseline.sql", "0001_trace_id.sql"];
const created: string[] = [];
const clients: Sql[] = [];

/** A new, empty database on the run's server, and a client on it. */
async function emptyDatabase(label: string): Promise<Sql> {
  const name = `eo_baseline_${label}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name} encoding 'UTF8' template template0`);
  await admin.end();
  created.push(name);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const sql = postgres(url.toString(), { max: 4, onnotice: () => {} });
  clients.push(sql);
  return sql;
}

/** Everything the catalog says about the key table in `schema`, free of names that differ by placement. */
async function catalogOf(sql: Sql, schema = "public") {
  const table = `${schema}.idempotency_keys`;
  const columns = await sql`
    select a.attname as name, format_type(a.atttypid, a.atttypmod) as type, a.attnotnull as not_null,
           pg_get_expr(d.adbin, d.adrelid) as default
    from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where a.attrelid = ${table}::regclass and a.attnum > 0 and not a.attisdropped
    order by a.attnum`;
  const constraints = await sql`
    select conname as name, contype as type, pg_get_constraintdef(oid) as definition
    from pg_constraint where conrelid = ${table}::regclass order by conname`;
  const indexes = await sql`
    select c.relname as name, replace(pg_get_indexdef(i.indexrelid), ${`${schema}.`}, '') as definition, c.reloptions as options
    from pg_index i join pg_class c on c.oid = i.indexrelid where i.indrelid = ${table}::regclass order by c.relname`;
  const [storage] = await sql`select reloptions as options, relpersistence as persistence from pg_class where oid = ${table}::regclass`;
  return { columns: [...columns], constraints: [...constraints], indexes: [...indexes], storage };
}

let appBuilt: Sql;
let appCatalog: Awaited<ReturnType<typeof catalogOf>>;

beforeAll(async () => {
  // A database as the app's migrations left it before the package existed: the drizzle migrations alone.
  appBuilt = await emptyDatabase("app");
  await migrateApp(drizzle({ client: appBuilt }), { migrationsFolder });
  appCatalog = await catalogOf(appBuilt);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end({ timeout: 5 })));
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  for (const name of created) await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.end();
});

describe("the package's baseline migration", () => {
  it("is recorded but changes nothing on a database whose key table came from the app's migrations", async () => {
    expect(appCatalog.columns).toHaveLength(24);
    expect(await migrateKeyTable(appBuilt)).toEqual(PACKAGE_MIGRATIONS);
    expect(await catalogOf(appBuilt)).toEqual(appCatalog);
    expect(await migrateKeyTable(appBuilt)).toEqual([]);
  });

  it("builds the identical table on an empty database", async () => {
    const empty = await emptyDatabase("empty");
    expect(await pendingMigrations(empty)).toEqual(PACKAGE_MIGRATIONS);
    expect(await migrateKeyTable(empty)).toEqual(PACKAGE_MIGRATIONS);
    expect(await pendingMigrations(empty)).toEqual([]);
    expect(await catalogOf(empty)).toEqual(appCatalog);
    expect(appCatalog.storage).toMatchObject({ options: ["fillfactor=80"] });
  });

  it("puts the table in the schema it is given, identical there", async () => {
    const empty = await emptyDatabase("schema");
    expect(await migrateKeyTable(empty, { schema: "eo_keys" })).toEqual(PACKAGE_MIGRATIONS);
    expect(await pendingMigrations(empty, { schema: "eo_keys" })).toEqual([]);
    // The record is in the schema too: `public` has none of it.
    expect(await pendingMigrations(empty)).toEqual(PACKAGE_MIGRATIONS);
    expect(await catalogOf(empty, "eo_keys")).toEqual(appCatalog);
    expect(await empty`select to_regclass('public.idempotency_keys') as t`).toEqual([{ t: null }]);
  });
});
