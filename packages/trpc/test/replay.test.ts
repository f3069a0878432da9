/**
 * A retry that finds its atomic key's answer stored, the common retry, is
 * answered by the look alone: one statement through the pool, no
 * connection reserved, nothing opened, so a storm of retries takes no
 * connection from new work. Counted through the runtime's `reserve`, where
 * every key transaction takes its connection.
 */
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { effectsOf, executions, fresh, openDatabase, post, serve, type Served } from "./harness.js";

let sql: Sql;
let app: Served;
let reserved = 0;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"));
  app = await serve(
    sql,
    {},
    {
      reserve: () => {
        reserved++;
        return sql.reserve();
      },
    },
  );
});
afterAll(async () => {
  await app?.close();
  await sql?.end({ timeout: 5 });
});

describe("an atomic key's stored answer", () => {
  it("is replayed to every retry without reserving a connection; the key's one run reserved one, after its look", async () => {
    for (let i = 0; i < 5; i++) {
      const key = fresh(`stored${i}`);
      const body = { tag: key, amount: 5 };
      const before = reserved;
      // No Idempotency-Attempt: the first send looks first too, finds nothing, then reserves its transaction's connection.
      const first = await post(app.base, "deposit", key, body);
      expect(first).toMatchObject({ status: 200, replayed: false });
      expect(reserved - before).toBe(1);
      for (let retry = 0; retry < 3; retry++) {
        expect(await post(app.base, "deposit", key, body)).toEqual({ ...first, replayed: true });
      }
      expect(reserved - before).toBe(1);
      expect(executions.get(key)).toBe(1);
      expect(await effectsOf(sql, key)).toEqual({ deposit: 1 });
    }
  });
});
