/**
 * Idempotency events reach the log as debug lines only: at the default level
 * (info) a terminal shows none of them, while the events that the key row
 * cannot tell are still written to idempotency_events.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { IdempotencyEventType } from "@exactly-once/trpc";
import { database } from "../../db/client";
import { app } from "../../server/app";
import { logger } from "../../server/logger";
import { newKey, newTenant } from "../support/api";

/** The log lines written while `run` runs, at `level`, as pino would write them. */
async function linesAt(level: string, run: () => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const stream = (logger as unknown as Record<symbol, { write: (line: string) => void }>)[pino.symbols.streamSym]!;
  const write = stream.write;
  const before = logger.level;
  stream.write = (line: string) => void lines.push(line);
  logger.level = level;
  try {
    await run();
  } finally {
    logger.level = before;
    stream.write = write;
  }
  return lines;
}

describe("idempotency events in the log", () => {
  it("are debug lines: none at info, one each at debug, and a conflict is stored either way", async () => {
    const tenant = await newTenant("event-log");
    const event = (key: string) => ({ type: IdempotencyEventType.Conflict, tenantId: tenant.id, key, procedure: "payments.create" });
    const [quiet, loud] = [newKey(), newKey()];
    expect(await linesAt("info", async () => app.eventLog.record(event(quiet)))).toEqual([]);
    const debug = await linesAt("debug", async () => app.eventLog.record(event(loud)));
    expect(debug).toHaveLength(1);
    expect(JSON.parse(debug[0]!)).toMatchObject({ level: 20, msg: "idempotency conflict", idempotency: { key: loud } });
    await app.eventLog.flush();
    const rows = await database().sql<
      { key: string }[]
    >`select key from idempotency_events where tenant_id = ${tenant.id} and type = 'conflict' order by key`;
    expect(rows.map((r) => r.key).sort()).toEqual([quiet, loud].sort());
  });
});
