/**
 * Duplicates that really overlap: 20 sends of one key, each on a connection
 * of its own, headers first and every body released at one moment (the
 * barrier), so the server has all 20 in hand together; the first holds the
 * key a moment while they arrive. Five rounds per flavour, each with a
 * fresh key; what counts is the rows written, not the statuses.
 */
import http from "node:http";
import type { Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  effectsOf,
  executions,
  FLAVOURS,
  fresh,
  hooks,
  keyRow,
  ONE_EXECUTION,
  openDatabase,
  recorder,
  serve,
  type Answer,
  type Flavour,
  type Served,
} from "./harness.js";

const SENDS = 20;
const ROUNDS = 5;

const log = recorder();
let sql: Sql;
let app: Served;
beforeAll(async () => {
  sql = await openDatabase(inject("packageDatabaseUrl"), SENDS + 10);
  app = await serve(sql, {}, { onEvent: log.onEvent });
});
afterAll(async () => {
  await app?.close();
  await sql?.end({ timeout: 5 });
});

/** A POST whose headers are out once `connected` resolves; `release` sends its body. */
function prepare(procedure: Flavour, key: string, body: unknown, first: boolean) {
  const payload = Buffer.from(JSON.stringify(body));
  const req = http.request(`${app.base}/${procedure}`, {
    method: "POST",
    agent: false,
    headers: {
      "content-type": "application/json",
      "content-length": payload.length,
      "idempotency-key": key,
      // Half say they are the key's first send: the path that claims without looking first.
      ...(first ? { "idempotency-attempt": "1" } : {}),
    },
  });
  const connected = new Promise<void>((resolve) =>
    req.once("socket", (socket) => (socket.connecting ? socket.once("connect", () => resolve()) : resolve())),
  );
  const answer = new Promise<Answer>((resolve, reject) => {
    req.once("response", (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          body: text,
          replayed: res.headers["idempotent-replayed"] === "true",
          retryAfter: (res.headers["retry-after"] as string | undefined) ?? null,
        }),
      );
    });
    req.once("error", reject);
  });
  req.flushHeaders();
  return { connected, answer, release: () => req.end(payload) };
}

describe.each(FLAVOURS)("$flavour ($procedure)", ({ procedure }) => {
  for (let round = 1; round <= ROUNDS; round++) {
    it(`round ${round}: ${SENDS} duplicates at one moment run once, and every success is the same answer`, async () => {
      const tag = fresh(`burst-${procedure}`);
      // The first execution holds its key 300 ms: the duplicates, released with it, reach the server while it is held.
      hooks.set(tag, (point) => (point === "before" ? new Promise((r) => setTimeout(r, 300)) : undefined));
      const sends = Array.from({ length: SENDS }, (_, i) => prepare(procedure, tag, { tag, amount: 700 }, i % 2 === 1));
      await Promise.all(sends.map((s) => s.connected));
      for (const s of sends) s.release();
      const answers = await Promise.all(sends.map((s) => s.answer));
      hooks.delete(tag);
      const successes = answers.filter((a) => a.status === 200);
      expect(successes.length).toBeGreaterThan(0);
      expect(new Set(successes.map((a) => a.body)).size, "every success is the one stored answer").toBe(1);
      expect(
        successes.filter((a) => !a.replayed),
        "one success ran, the others replayed it",
      ).toHaveLength(1);
      const row = await keyRow(sql, tag);
      expect(row).toMatchObject({ state: "completed", response_status: 200 });
      expect(JSON.parse(row!.response_body!)).toEqual(JSON.parse(successes[0]!.body).result.data);
      expect(log.of(tag).filter((e) => e.type === "replayed")).toHaveLength(successes.length - 1);
      expect(
        answers.filter((a) => a.status !== 200 && a.status !== 409),
        "a duplicate is the answer or a 409 while it runs",
      ).toEqual([]);
      // What ran is what the database kept. An atomic duplicate runs its handler too (src/atomic.ts: the key row's
      // primary key decides at the end), and its writes roll back with its failed INSERT; a recoverable handler
      // runs once, since its first recovery point commits on its own.
      expect(await effectsOf(sql, tag)).toEqual(ONE_EXECUTION[procedure]);
      if (procedure === "pay") expect(executions.get(tag)).toBe(1);
    });
  }
});
