/**
 * An aborted upload (issue 55): a client that sends the headers and part of
 * a body, then hangs up. Next.js buffers request bodies for the proxy and
 * logged each abort as `Error: aborted` with its stack, an error line a
 * client can print at will. Here a server of its own, at debug, takes aborts
 * on the API, the storefront's tRPC and a page, still serves a payment after
 * them, and its log holds one debug line per abort and no error line.
 */
import { randomUUID } from "node:crypto";
import net from "node:net";
import { expect, test } from "@playwright/test";
import { drizzle } from "drizzle-orm/postgres-js";
import * as schema from "../../db/schema";
import { createTenant } from "../../server/tenants/service";
import { startOwnServer, type OwnServer } from "../support/own-server";
import { isErrorLine, readServerLog } from "../support/server-log";

test.describe.configure({ timeout: 300_000 });

let server: OwnServer;
test.beforeAll(async () => {
  server = await startOwnServer("e2e_aborted_upload", { LOG_LEVEL: "debug" });
});
test.afterAll(async () => {
  await server?.stop();
});

/** Headers announcing 100 kB, 10 bytes of body, then the connection closed once the server has read them. */
function abortedUpload(path: string): Promise<void> {
  const { hostname, port } = new URL(server.baseURL);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n` +
          `Idempotency-Key: ${randomUUID()}\r\nContent-Length: 100000\r\n\r\n{"amount":`,
      );
      setTimeout(() => socket.destroy(), 300);
    });
    socket.once("close", () => resolve());
    socket.once("error", reject);
  });
}

const PATHS = ["/api/v1/payments", "/api/trpc/checkout.pay", "/checkout"];

test("each aborted upload is one debug line, never an error, and the server goes on serving", async ({ playwright }) => {
  for (const path of PATHS) await abortedUpload(path);

  const { token } = await createTenant(drizzle({ client: server.db, schema }), "Aborted uploads");
  const api = await playwright.request.newContext({
    baseURL: server.baseURL,
    extraHTTPHeaders: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  });
  const paid = await api.post("/api/v1/payments", {
    headers: { "Idempotency-Key": randomUUID() },
    data: { amount: "3.00", currency: "EUR", destination: "acct_test_123" },
  });
  expect(paid.status()).toBe(201);
  await api.dispose();

  const aborts = () =>
    readServerLog(server.log)
      .filter((line) => line.entry?.msg === "the client stopped sending the request body")
      .map((line) => line.entry?.path);
  await expect.poll(aborts, { timeout: 10_000 }).toEqual(PATHS);
  expect(await server.terminate()).toBe(0);
  const log = readServerLog(server.log);
  expect(log.filter(isErrorLine).map((line) => line.text)).toEqual([]);
  expect(aborts()).toEqual(PATHS);
});
