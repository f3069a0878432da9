/**
 * Fails the run on an error line in a server's log that no spec provoked on
 * purpose (support/server-log.ts), quoting each. A reporter, not a global
 * teardown: its `onEnd` comes after the web server has stopped, so what a
 * server logs while stopping counts too.
 */
import path from "node:path";
import type { FullResult, Reporter } from "@playwright/test/reporter";
import { SERVER_LOG_DIR, unexpectedServerErrors } from "./server-log";

const SHOWN = 10;
const SHOWN_CHARS = 600;

export default class ServerLogReporter implements Reporter {
  // Async because Reporter's type takes a changed status from a promise only.
  async onEnd(result: FullResult): Promise<{ status?: FullResult["status"] } | undefined> {
    const { kept, errors } = unexpectedServerErrors();
    if (!kept) {
      process.stderr.write(`\nThe shared server's log was not kept in ${SERVER_LOG_DIR}: nothing in it could be checked.\n`);
      return { status: "failed" };
    }
    if (errors.length === 0) return undefined;
    process.stderr.write(`\n${errors.length} unexpected error line(s) in the servers' logs (${SERVER_LOG_DIR}):\n`);
    // The first few, each cut short (a stack trace makes a line kilobytes long): the files hold them whole.
    for (const line of errors.slice(0, SHOWN)) {
      const text = line.text.length > SHOWN_CHARS ? `${line.text.slice(0, SHOWN_CHARS)}…` : line.text;
      process.stderr.write(`  ${path.basename(line.file)}: ${text}\n`);
    }
    if (errors.length > SHOWN) process.stderr.write(`  … and ${errors.length - SHOWN} more\n`);
    return result.status === "passed" ? { status: "failed" } : undefined;
  }

  printsToStdio(): boolean {
    return false;
  }
}
