/**
 * The app's own pool carries the key transactions' limits from each
 * connection's start (server/database.ts), so its key transactions open
 * with BEGIN alone; where the limits come from in general is the package's
 * to test (packages/trpc/test/limits.test.ts).
 */
import type { Sql } from "postgres";
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { IDLE_IN_TRANSACTION_TIMEOUT_MS, LOCK_TIMEOUT_MS } from "../../db/limits";
import { env } from "../../server/env";

const show = async (sql: Pick<Sql, "unsafe">, setting: string) => (await sql.unsafe(`show ${setting}`))[0]![setting] as string;

describe("the limits of a key transaction", () => {
  it.skipIf(env.DATABASE_POOLED)("the app's own pool carries the app's limits on a direct connection (server/database.ts)", async () => {
    expect(await show(database().sql, "lock_timeout")).toBe(`${LOCK_TIMEOUT_MS / 1000}s`);
    expect(await show(database().sql, "idle_in_transaction_session_timeout")).toBe(`${IDLE_IN_TRANSACTION_TIMEOUT_MS / 1000}s`);
  });
});
