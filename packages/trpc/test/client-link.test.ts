/**
 * The client link against the package's own server and database: the
 * network loses answers the server had already sent, and proxies send a
 * request twice. The link retries with the same key (and says which send
 * it is), so the mutation runs once and the retry gets the stored answer.
 */
import { createTRPCClient, httpLink } from "@trpc/client";
import type { Sql } from "postgres";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { idempotencyHeaders, idempotencyLink } from "../src/client/index.js";
import { createApp, effectsOf, executions, fresh, openDatabase, serve, type Served } from "./harness.js";

type AppRouter = ReturnType<typeof createApp>["router"];

let sql: Sql;
let app: Served;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(sql);
});
afterAll(async () => {
  await app?.close();
  await sql?.end({ timeout: 5 });
});

/** A fetch that sends every request for real and throws away the answers of the sends listed in `lose` (1-based). */
function lossyFetch(lose: number[]) {
  const sent: { key: string | null; attempt: string | null; status: number }[] = [];
  const impl = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(url, init);
    const headers = new Headers(init?.headers);
    sent.push({ key: headers.get("idempotency-key"), attempt: headers.get("idempotency-attempt"), status: response.status });
    if (lose.includes(sent.length)) {
      await response.body?.cancel();
      throw new TypeError("fetch failed");
    }
    return response;
  };
  return { sent, impl: impl as typeof fetch };
}

const clientWith = (fetchImpl: typeof fetch) =>
  createTRPCClient<AppRouter>({
    links: [
      idempotencyLink({ baseDelayMs: 5, maxDelayMs: 20 }),
      httpLink({ url: app.base, headers: idempotencyHeaders, fetch: fetchImpl }),
    ],
  });

it.each(["deposit", "pay"] as const)(
  "%s: two answers lost on the way back; the third send replays the first's result, one execution",
  async (procedure) => {
    const tag = fresh(`link-${procedure}`);
    const network = lossyFetch([1, 2]);
    const result = await clientWith(network.impl)[procedure].mutate({ tag, amount: 900 }, { context: { idempotencyKey: tag } });
    expect(result).toMatchObject({ amount: 900 });
    expect(network.sent).toEqual([
      { key: tag, attempt: "1", status: 200 },
      { key: tag, attempt: "2", status: 200 },
      { key: tag, attempt: "3", status: 200 },
    ]);
    expect(executions.get(tag)).toBe(1);
    expect(await effectsOf(sql, tag)).toEqual(procedure === "deposit" ? { deposit: 1 } : { recorded: 1, charged: 1 });
  },
);

it("a key the client keeps for one intent: a second mutate with it is a replay, with another input a refusal the link does not retry", async () => {
  const tag = fresh("link-intent");
  const network = lossyFetch([]);
  const client = clientWith(network.impl);
  const first = await client.deposit.mutate({ tag, amount: 300 }, { context: { idempotencyKey: tag } });
  expect(await client.deposit.mutate({ tag, amount: 300 }, { context: { idempotencyKey: tag } })).toEqual(first);
  await expect(client.deposit.mutate({ tag, amount: 301 }, { context: { idempotencyKey: tag } })).rejects.toMatchObject({
    data: { httpStatus: 422 },
  });
  expect(network.sent.map((s) => s.status)).toEqual([200, 200, 422]);
  expect(executions.get(tag)).toBe(1);
});
