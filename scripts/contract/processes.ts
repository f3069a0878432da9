/**
 * The processes a contract or conformance run starts (the app, Prism, the
 * kit), each in its own process group, and their one orderly stop: on exit,
 * on an error, and on SIGINT/SIGTERM/SIGHUP however often they arrive (Ctrl-C
 * reaches the whole group and npm forwards it again; a second signal must not
 * cut the stop short).
 */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import path from "node:path";
import { projectRoot } from "../../db/cluster-home";

const children = new Set<ChildProcess>();
let stopping = false;

export const isStopping = () => stopping;

/** A tool this repository installs. */
export const bin = (name: string) => path.join(projectRoot, "node_modules", ".bin", name);

/** A child in a group of its own, so a stop reaches everything it started (npm start's Next.js server, say). */
export function start(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

function stopOne(child: ChildProcess): Promise<void> {
  if (!child.pid || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    // The group is gone already.
  }
  return exited;
}

export const stopAll = () => Promise.all([...children].map(stopOne)).then(() => undefined);

for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const)
  process.on(signal, () => {
    stopping = true;
    void stopAll();
  });

/** Waits until `url` answers 2xx (or fails when `child` exits first). */
export async function waitFor(url: string, child: ChildProcess, ms = 300_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (stopping) throw new Error("stopped");
    if (child.exitCode !== null) throw new Error(`${child.spawnfile} exited with ${child.exitCode} before ${url} answered`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(5000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Runs a tool to its end, its output passed through (prefixed), and resolves its exit code. */
export function run(command: string, args: string[], options: SpawnOptions = {}): Promise<number> {
  return new Promise((resolve) => {
    const child = start(command, args, { stdio: "inherit", ...options });
    child.once("exit", (code) => resolve(code ?? 1));
  });
}
