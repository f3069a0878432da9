/**
 * The same checks through each adapter, over its real request path (HTTP
 * for Express and Fastify; for Next.js the route's exported handler called
 * with a web `Request`, as Next calls it), against a real PostgreSQL:
 * - a retry with the same key is answered from the store: one deposit, the
 *   same bytes, `Idempotent-Replayed: true` (the middleware's header, sent
 *   by the adapter's `responseMeta`);
 * - the same key with another amount: 422, nothing written;
 * - ten duplicates at once: one deposit, ten identical bodies.
 * The database is the standalone example's test database (embedded, or a
 * database of its own on DATABASE_URL's server): `npm run example:test`
 * installs both examples side by side.
 */
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { migrate } from "@exactly-once/trpc";
import postgres, { type Sql } from "postgres";
import { startDatabase, type TestDatabase } from "../../standalone/test/database.js";
import { createRouter, createTables } from "../src/app.js";
import { expressApp } from "../src/express.js";
import { fastifyApp } from "../src/fastify.js";

type Send = (key: string, input: unknown) => Promise<Response>;

let db: TestDatabase;
let sql: Sql;
const stops: (() => Promise<unknown>)[] = [];
const adapters: Record<string, Send> = {};

const json = (key: string, input: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", "Idempotency-Key": key },
  body: JSON.stringify(input),
});

before(async () => {
  db = await startDatabase();
  sql = postgres(db.url, { max: 20, onnotice: () => {} });
  await migrate(sql);
  await createTables(sql);

  const server = expressApp(createRouter(sql)).listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  stops.push(() => new Promise((resolve) => server.close(resolve)));
  adapters.express = (key, input) => fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/trpc/deposit`, json(key, input));

  const app = await fastifyApp(createRouter(sql));
  const fastifyUrl = await app.listen({ port: 0, host: "127.0.0.1" });
  stops.push(() => app.close());
  adapters.fastify = (key, input) => fetch(`${fastifyUrl}/trpc/deposit`, json(key, input));

  // The route module opens its pool from DATABASE_URL when Next loads it.
  process.env.DATABASE_URL = db.url;
  const route = await import("../src/nextjs/app/api/trpc/[trpc]/route.js");
  const next = await import("../src/nextjs/db.js");
  stops.push(() => next.sql.end({ timeout: 5 }));
  adapters.nextjs = (key, input) => route.POST(new Request("http://127.0.0.1/api/trpc/deposit", json(key, input)));
});

after(async () => {
  for (const stop of stops) await stop();
  await sql?.end({ timeout: 5 });
  await db?.dispose();
});

const depositsFor = async (key: string) => (await sql`select count(*)::int as n from deposits where key = ${key}`)[0]!.n as number;

for (const name of ["nextjs", "express", "fastify"]) {
  describe(name, () => {
    const send: Send = (key, input) => adapters[name]!(key, input);

    it("answers a retry with the same key from the store: one deposit, the same bytes, Idempotent-Replayed", async () => {
      const key = `${name}-${crypto.randomUUID()}`;
      const first = await send(key, { account: "acct_1", amount: 2500 });
      const retry = await send(key, { account: "acct_1", amount: 2500 });
      assert.equal(first.status, 200);
      assert.equal(retry.status, 200);
      assert.equal(first.headers.get("idempotent-replayed"), null);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      assert.equal(await retry.text(), await first.text());
      assert.equal(await depositsFor(key), 1);
    });

    it("refuses the same key with another amount (422) and writes nothing", async () => {
      const key = `${name}-${crypto.randomUUID()}`;
      assert.equal((await send(key, { account: "acct_1", amount: 2500 })).status, 200);
      assert.equal((await send(key, { account: "acct_1", amount: 2600 })).status, 422);
      assert.equal(await depositsFor(key), 1);
    });

    it("runs ten duplicates sent at once one time: one deposit, ten identical bodies", async () => {
      const key = `${name}-${crypto.randomUUID()}`;
      const answers = await Promise.all(Array.from({ length: 10 }, () => send(key, { account: "acct_1", amount: 100 })));
      assert.deepEqual(
        answers.map((a) => a.status),
        Array(10).fill(200),
      );
      assert.equal(new Set(await Promise.all(answers.map((a) => a.text()))).size, 1);
      assert.equal(await depositsFor(key), 1);
    });
  });
}
