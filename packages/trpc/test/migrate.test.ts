/**
 * `migrate` on a client as an adopter opens it (`postgres(url)`, no
 * `onnotice`), where postgres-js prints every NOTICE to the console as a raw
 * object: a start on an up-to-date database printed "relation
 * exactly_once_migrations already exists, skipping" (issue 54). Each run goes
 * to a schema of its own on the run's database. And on databases of their
 * own: two migrators starting together apply each migration once; a schema
 * after the app's own on the search_path keeps an app's tables where they are.
 */
import postgres, { type Sql } from "postgres";
import { afterAll, describe, expect, inject, it, vi } from "vitest";
import { migrate, pendingMigrations } from "../src/migrate.js";

const schema = `quiet_${Math.random().toString(36).slice(2, 10)}`;
const sql = postgres(inject("packageDatabaseUrl"), { max: 1 });

afterAll(async () => {
  // One connection (max 1): the setting holds for the drop, whose "drop cascades to" notice is no news either.
  await sql`set client_min_messages to warning`;
  await sql.unsafe(`drop schema if exists ${schema} cascade`);
  await sql.end();
});

it("prints nothing, on a new schema and again on an up-to-date one", async () => {
  const printed = vi.spyOn(console, "log").mockImplementation(() => undefined);
  try {
    expect((await migrate(sql, { schema })).length).toBeGreaterThan(0);
    expect(await migrate(sql, { schema })).toEqual([]);
    expect(printed.mock.calls).toEqual([]);
  } finally {
    printed.mockRestore();
  }
  expect(await pendingMigrations(sql, { schema })).toEqual([]);
});

describe("on a database of its own", () => {
  /** The package's migrations, in the order it applies them. */
  const PACKAGE_MIGRATIONS = ["0000_baseline.sql", "0001_trace_id.sql"];
  const created: string[] = [];
  const clients: Sql[] = [];
  const serverUrl = inject("packageDatabaseUrl");

  /** A new, empty database on the run's server: its URL, and a client on it. */
  async function emptyDatabase(label: string): Promise<{ url: string; sql: Sql }> {
    const name = `eo_migrate_${label}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
    const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name} encoding 'UTF8' template template0`);
    await admin.end();
    created.push(name);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const client = postgres(url.toString(), { max: 4, onnotice: () => {} });
    clients.push(client);
    return { url: url.toString(), sql: client };
  }

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end({ timeout: 5 })));
    const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
    for (const name of created) await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  });

  it("is applied once when two migrators start together", async () => {
    const { sql: empty } = await emptyDatabase("race");
    const [a, b] = await Promise.all([migrate(empty), migrate(empty)]);
    expect([...a, ...b]).toEqual(PACKAGE_MIGRATIONS);
    expect(await empty`select name from exactly_once_migrations order by name`).toEqual(PACKAGE_MIGRATIONS.map((name) => ({ name })));
  });

  it("in a schema after the app's own on the search_path (the guide's advice), an app's unqualified tables stay where they are across starts", async () => {
    const { url } = await emptyDatabase("path");
    /** One start of an app that migrates, creates its table unqualified and counts its rows, on a pool with `searchPath`. */
    const start = async (searchPath: string, insert = false) => {
      const pool = postgres(url, { max: 1, onnotice: () => {}, connection: { search_path: searchPath } });
      try {
        await migrate(pool, { schema: "idempotency" });
        await pool`create table if not exists orders (id serial primary key)`;
        if (insert) await pool`insert into orders default values`;
        // Where each unqualified name resolves on this pool, and how many orders the app sees there.
        const schemaOf = (name: string) => pool`(select relnamespace::regnamespace::text from pg_class where oid = to_regclass(${name}))`;
        const [row] = await pool<
          { orders: number; ordersIn: string; keys: string }[]
        >`select (select count(*)::int from orders) as orders, ${schemaOf("orders")} as "ordersIn", ${schemaOf("idempotency_keys")} as keys`;
        return row;
      } finally {
        await pool.end({ timeout: 5 });
      }
    };
    const advised = { orders: 1, ordersIn: "public", keys: "idempotency" };
    expect(await start("public,idempotency", true)).toEqual(advised);
    // The advice: the app's schema first. The next start finds its order, the middleware its key table.
    expect(await start("public,idempotency")).toEqual(advised);
    // The trap the guide warns of: the package's schema first, and a start creates an empty idempotency.orders that hides the real one.
    expect(await start("idempotency,public")).toEqual({ orders: 0, ordersIn: "idempotency", keys: "idempotency" });
  });
});
