/**
 * What a running server leaves for the CLIs of its checkout: one file per
 * server process in `.data/run/` (mode 0600: it holds the database URL),
 * naming the database and the provider it uses. A CLI started while a server
 * runs works on that server's database and provider with no variables of its
 * own, and, borrowing rather than starting, never stops the server's cluster.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stateDir } from "./cluster-home";
import { processAlive } from "./file-lock";

/**
 * `embeddedDir`: the data directory of the embedded cluster the server uses;
 * absent with DATABASE_URL. `ha`: the checkout's HA database (`npm run
 * cluster -- --ha`), which stands in for the embedded one while it runs.
 */
export type RunFile = { pid: number; url: string; databaseUrl: string; pspUrl: string; embeddedDir?: string; ha?: boolean };

const runDir = path.join(stateDir, "run");
const fileOf = (pid: number) => path.join(runDir, `server-${pid}.json`);

export function writeRunFile(run: Omit<RunFile, "pid">): () => void {
  mkdirSync(runDir, { recursive: true, mode: 0o700 });
  const file = fileOf(process.pid);
  writeFileSync(file, JSON.stringify({ pid: process.pid, ...run }), { mode: 0o600 });
  return () => rmSync(file, { force: true });
}

/** The run file of the server with process id `pid`, once it serves. */
export function runFileOf(pid: number): RunFile | undefined {
  try {
    return JSON.parse(readFileSync(fileOf(pid), "utf8")) as RunFile;
  } catch {
    return undefined;
  }
}

/** A live server of this checkout that `matches`, if one runs; files of dead ones (SIGKILL) are removed. */
export function runningServer(matches: (run: RunFile) => boolean): RunFile | undefined {
  let names: string[];
  try {
    names = readdirSync(runDir)
      .filter((n) => /^server-\d+\.json$/.test(n))
      .sort();
  } catch {
    return undefined;
  }
  let found: RunFile | undefined;
  for (const name of names) {
    const file = path.join(runDir, name);
    try {
      const run = JSON.parse(readFileSync(file, "utf8")) as RunFile;
      if (processAlive(run.pid)) {
        if (!found && matches(run)) found = run;
        continue;
      }
    } catch {
      // Half written by a server starting now, or unreadable: not a server to use.
      continue;
    }
    rmSync(file, { force: true });
  }
  return found;
}
