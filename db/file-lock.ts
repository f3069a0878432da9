/**
 * A lock between processes on one machine: a file created exclusively that
 * holds its owner's pid. A lock whose owner is dead (a run killed with
 * SIGKILL) is taken over, so nobody waits for a process that is gone.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";

/** Alive and not a zombie (a container's init may never reap a killed process). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    // No /proc (macOS): the signal's answer stands.
    return true;
  }
}

function tryTake(file: string): boolean {
  try {
    const fd = openSync(file, "wx", 0o600);
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    let holder = 0;
    try {
      holder = Number(readFileSync(file, "utf8"));
    } catch {
      // Released between our open and our read: try again at once.
      return false;
    }
    // An empty file is a holder between its open and its write, alive.
    if (holder > 0 && !processAlive(holder)) {
      rmSync(file, { force: true });
      return tryTake(file);
    }
    return false;
  }
}

/**
 * Waits (polling) until the lock is ours; `onWait` is called once when it is
 * not free at first. Returns the release.
 */
export async function acquireFileLock(file: string, onWait?: (holder: string) => void): Promise<() => void> {
  let waited = false;
  while (!tryTake(file)) {
    if (!waited) {
      waited = true;
      let holder = "another process";
      try {
        holder = `process ${readFileSync(file, "utf8")}`;
      } catch {
        // Already gone: the next attempt takes it.
      }
      onWait?.(holder);
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  return () => rmSync(file, { force: true });
}
