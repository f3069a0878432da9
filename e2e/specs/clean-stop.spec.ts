/**
 * A clean stop (SIGTERM to the run command) writes the idempotency events the
 * requests left buffered before the pool closes: a replay's count waits up to
 * 5 s in memory (server/keys/events.ts), and the stop must not drop it. The
 * run command serves requests from Next.js's route bundles while its start-up
 * code runs in a bundle of its own: one event log per process, or the stop
 * flushes one that never saw a request.
 */
import { randomUUID } from "node:crypto";
import { expect, test } from "@playwright/test";
import { drizzle } from "drizzle-orm/postgres-js";
import * as schema from "../../db/schema";
import { createTenant } from "../../server/tenants/service";
import { startOwnServer, type OwnServer } from "../support/own-server";

test.describe.configure({ timeout: 300_000 });

let server: OwnServer;
test.beforeAll(async () => {
  server = await startOwnServer("e2e_clean_stop", {});
});
test.afterAll(async () => {
  await server?.stop();
});

test("replays answered just before SIGTERM are counted on the key, and their event row is written", async ({ playwright }) => {
  const { tenant, token } = await createTenant(drizzle({ client: server.db, schema }), "Clean stop");
  const api = await playwright.request.newContext({
    baseURL: server.baseURL,
    extraHTTPHeaders: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  });
  const key = randomUUID();
  const data = { amount: "25.00", currency: "EUR", destination: "acct_test_123" };
  const first = await api.post("/api/v1/payments", { headers: { "Idempotency-Key": key }, data });
  expect(first.status()).toBe(201);
  for (let i = 0; i < 3; i++) {
    const replay = await api.post("/api/v1/payments", { headers: { "Idempotency-Key": key }, data });
    expect(replay.headers()["idempotent-replayed"]).toBe("true");
  }
  await api.dispose();

  // Well inside the 5 s the replay counts wait in memory: only the stop can have written them.
  expect(await server.terminate()).toBe(0);
  const [row] = await server.db<{ replay_count: number }[]>`
    select replay_count from idempotency_keys where tenant_id = ${tenant.id} and key = ${key}`;
  expect(row?.replay_count).toBe(3);
  const events = await server.db<{ count: number }[]>`
    select count from idempotency_events where tenant_id = ${tenant.id} and key = ${key} and type = 'replayed'`;
  expect(events.map((e) => e.count)).toEqual([3]);
});
