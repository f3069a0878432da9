/** The lock that makes a second `npm start` wait for the first one's build, and two starts share one initdb. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { acquireFileLock } from "./file-lock";

describe("acquireFileLock", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), "eo-lock-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("lets one holder in at a time; the next gets it when the first releases", async () => {
    const file = path.join(dir, "build.lock");
    const release = await acquireFileLock(file);
    const waits: string[] = [];
    let second = false;
    const next = acquireFileLock(file, (holder) => waits.push(holder)).then((r) => {
      second = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 400));
    expect(second).toBe(false);
    expect(waits).toEqual([`process ${process.pid}`]);
    release();
    (await next)();
    expect(second).toBe(true);
  });

  it("takes over a lock whose holder is dead (a run killed with SIGKILL)", async () => {
    const file = path.join(dir, "build.lock");
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout;
    writeFileSync(file, dead);
    const waits: string[] = [];
    const release = await acquireFileLock(file, (holder) => waits.push(holder));
    release();
    // Taken at once: nobody is told to wait for a process that is gone.
    expect(waits).toEqual([]);
  });
});
