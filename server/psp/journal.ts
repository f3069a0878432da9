/**
 * The stand-in's records on disk, so it keeps its charges, refunds and
 * stored answers across a restart as a real provider does: without them a
 * restarted stand-in knows none of the charges the app's ledger records, and
 * `npm run reconcile` reports every one as missing.
 *
 * An append-only file of JSON lines, one per change, written synchronously
 * before the answer leaves (a stand-in killed right after answering has the
 * change on disk). Reading replays the lines in order; a last line cut off by
 * a kill mid-write is dropped, any other line that does not parse is an error
 * that names the file.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, truncateSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { chargeSchema, refundSchema } from "./schemas";

const entrySchema = z.discriminatedUnion("kind", [
  /** A charge as it stands after a change (created, captured, voided, refunded). */
  z.object({ kind: z.literal("charge"), charge: chargeSchema }),
  z.object({ kind: z.literal("refund"), refund: refundSchema }),
  /** A downstream key's stored answer (5xx answers are never stored). */
  z.object({ kind: z.literal("key"), key: z.string(), fingerprint: z.string(), status: z.number().int(), body: z.string() }),
]);
export type JournalEntry = z.infer<typeof entrySchema>;

export type Journal = { entries: JournalEntry[]; append: (entry: JournalEntry) => void };

export class JournalError extends Error {
  override readonly name = "JournalError";
}

export function openJournal(file: string): Journal {
  mkdirSync(path.dirname(file), { recursive: true });
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  // Text after the last newline is a write the process did not finish: cut, so the next append starts a line.
  const complete = text.slice(0, text.lastIndexOf("\n") + 1);
  if (complete.length < text.length) truncateSync(file, Buffer.byteLength(complete));
  const entries = complete
    .split("\n")
    .slice(0, -1)
    .map((line, i) => {
      const parsed = entrySchema.safeParse(safeJson(line));
      if (!parsed.success)
        throw new JournalError(`The stand-in's records in ${file} are damaged at line ${i + 1}: move the file away to start with none.`);
      return parsed.data;
    });
  return {
    entries,
    append: (entry) => appendFileSync(file, `${JSON.stringify(entry)}\n`, { mode: 0o600 }),
  };
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
