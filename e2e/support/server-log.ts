/**
 * What the servers under test print, kept for the run: every server the
 * suite starts (the shared one in support/stack.ts, a spec's own in
 * support/own-server.ts) copies its output into a file of SERVER_LOG_DIR as
 * well as passing it on, and the server-log reporter fails the run on any
 * error line in them that ALLOWED does not name. A suite that never read
 * its server's log passed while the built server's expiry sweep failed
 * every minute (issue 54).
 */
import type { ChildProcess } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { stripVTControlCharacters } from "node:util";
import { E2E_PORT, STATE_DIR } from "./settings";

/** One per port, so runs on different ports side by side never read each other's logs. */
export const SERVER_LOG_DIR = path.join(STATE_DIR, `server-logs-${E2E_PORT}`);

/** pino's `error`; `fatal` is 60. */
const ERROR_LEVEL = 50;

/** A line the server printed; `entry` when it is one of the logger's JSON lines. */
export type LogLine = { file: string; text: string; entry?: { level?: number; msg?: string; [field: string]: unknown } };

/**
 * Error lines a spec provokes on purpose, each named narrowly (the exact
 * message and what tells it apart) with the spec that provokes it.
 */
const ALLOWED: { why: string; matches: (line: LogLine) => boolean }[] = [];

/** Called once per run, by the server that starts first (support/stack.ts), before anything is written. */
export function clearServerLogs(): void {
  rmSync(SERVER_LOG_DIR, { recursive: true, force: true });
  mkdirSync(SERVER_LOG_DIR, { recursive: true });
}

/**
 * Copies `child`'s standard output and error (both piped) into `<name>.log`
 * and on to this process's own (its standard output only if `echoStdout`).
 * Written synchronously, so a process that exits right after its child has
 * lost no line.
 */
export function keepServerLog(child: ChildProcess, name: string, { echoStdout = true } = {}): string {
  mkdirSync(SERVER_LOG_DIR, { recursive: true });
  const file = path.join(SERVER_LOG_DIR, `${name}.log`);
  for (const [from, to] of [
    [child.stdout, echoStdout ? process.stdout : undefined],
    [child.stderr, process.stderr],
  ] as const) {
    from?.on("data", (chunk: Buffer) => {
      appendFileSync(file, chunk);
      to?.write(chunk);
    });
  }
  return file;
}

/** The lines of one log file, JSON ones parsed. */
export function readServerLog(file: string): LogLine[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((text) => text.trim() !== "")
    .map((text) => {
      try {
        const entry: unknown = JSON.parse(text);
        if (entry !== null && typeof entry === "object" && !Array.isArray(entry)) return { file, text, entry: entry as LogLine["entry"] };
      } catch {
        // Not one of the logger's lines (Next.js's own, a stack trace): judged as text below.
      }
      return { file, text };
    });
}

/**
 * An error line: the logger's at `error` or `fatal`, or one Next.js prints
 * for an error it caught itself (`⨯ ...`), or an uncaught error's report.
 */
export function isErrorLine(line: LogLine): boolean {
  if (line.entry) return typeof line.entry.level === "number" && line.entry.level >= ERROR_LEVEL;
  // Next.js colours its markers: the escapes go before the text is judged.
  return /^\s*⨯|^(Uncaught|Unhandled)|^\w*Error\b/.test(stripVTControlCharacters(line.text));
}

/** The shared server's log (support/stack.ts). */
export const SHARED_SERVER_LOG = "shared";

/**
 * Every error line of every server this run started that no spec provoked
 * on purpose; `kept` false when the shared server's log is missing (then
 * nothing was read, and nothing can be said).
 */
export function unexpectedServerErrors(): { kept: boolean; errors: LogLine[] } {
  const files = existsSync(SERVER_LOG_DIR) ? readdirSync(SERVER_LOG_DIR).filter((name) => name.endsWith(".log")) : [];
  const errors = files
    .flatMap((name) => readServerLog(path.join(SERVER_LOG_DIR, name)))
    .filter((line) => isErrorLine(line) && !ALLOWED.some((allowed) => allowed.matches(line)));
  return { kept: files.includes(`${SHARED_SERVER_LOG}.log`), errors };
}
