/**
 * The expiry sweep as users run it (issue 54): the built server's sweep
 * failed every round on the pool Drizzle shares, logging "expiry sweep
 * failed" each minute, and no spec ran it (the shared server runs without
 * one). Here a server of its own sweeps every second: a key past its
 * retention and an event older than the retention go, a younger event
 * stays, and its log shows the round and no error line.
 */
import { randomUUID } from "node:crypto";
import { expect, test } from "@playwright/test";
import { drizzle } from "drizzle-orm/postgres-js";
import * as schema from "../../db/schema";
import { createTenant } from "../../server/tenants/service";
import { startOwnServer, type OwnServer } from "../support/own-server";
import { isErrorLine, readServerLog } from "../support/server-log";

test.describe.configure({ timeout: 300_000 });

let server: OwnServer;
test.beforeAll(async () => {
  // At info, so the log shows the round that deleted the key.
  server = await startOwnServer("e2e_expiry_sweep", { IDEMPOTENCY_SWEEP_MS: "1000", LOG_LEVEL: "info" });
});
test.afterAll(async () => {
  await server?.stop();
});

test("deletes the expired key and the events older than the retention, and logs no error", async ({ playwright }) => {
  const { tenant, token } = await createTenant(drizzle({ client: server.db, schema }), "Expiry sweep");
  const api = await playwright.request.newContext({
    baseURL: server.baseURL,
    extraHTTPHeaders: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  });
  const key = randomUUID();
  const paid = await api.post("/api/v1/payments", {
    headers: { "Idempotency-Key": key },
    data: { amount: "12.00", currency: "EUR", destination: "acct_test_123" },
  });
  expect(paid.status()).toBe(201);
  await api.dispose();
  await server.db`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = ${tenant.id} and key = ${key}`;
  // The retention is the default 24 hours: one event two days old, one an hour old.
  await server.db`
    insert into idempotency_events (tenant_id, key, procedure, type, at) values
      (${tenant.id}, 'two-days-old', 'payments.create', 'conflict', now() - interval '2 days'),
      (${tenant.id}, 'an-hour-old', 'payments.create', 'conflict', now() - interval '1 hour')`;

  const left = async () => ({
    keys: (await server.db`select 1 from idempotency_keys where tenant_id = ${tenant.id} and key = ${key}`).length,
    events: (
      await server.db<{ key: string }[]>`select key from idempotency_events where tenant_id = ${tenant.id} and type = 'conflict'`
    ).map((row) => row.key),
  });
  await expect.poll(left, { timeout: 30_000, message: "the sweep never trimmed the key and the old event" }).toEqual({
    keys: 0,
    events: ["an-hour-old"],
  });

  expect(await server.terminate()).toBe(0);
  const log = readServerLog(server.log);
  expect(log.filter(isErrorLine).map((line) => line.text)).toEqual([]);
  expect(log.some((line) => line.entry?.msg === "expired idempotency keys deleted")).toBe(true);
});
