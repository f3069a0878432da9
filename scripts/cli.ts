/**
 * The frame of every CLI: the database for the length of the command (the
 * running server's, or an embedded cluster borrowed or started for it and
 * stopped only if this command started it), one line on standard error when
 * anything fails, and the exit code.
 */
import { ensureDatabase, type BootOptions, type Booted } from "../db/bootstrap";
import { closeDatabase } from "../db/client";
import { app } from "../server/app";
import { databaseSettings } from "../server/database";

export function runCli(main: (booted: Booted) => Promise<number>, options: BootOptions = {}): void {
  ensureDatabase(databaseSettings(app.settings), { seed: false, ...options })
    .then(async (booted) => {
      try {
        return await main(booted);
      } finally {
        await closeDatabase();
        await booted.embedded?.stop();
      }
    })
    .then(
      (code) => process.exit(code),
      (error: unknown) => {
        process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(1);
      },
    );
}
