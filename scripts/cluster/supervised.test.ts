/**
 * The cluster's processes start in their own folder, not the caller's (issue 59): from a clone in a 0700 folder,
 * Patroni's workers, run as the postgres user, chdir back to where their parent started, fail, and the node never
 * bootstraps. Python's own chdir to its start folder is that step, as the postgres user, with the caller inside a
 * folder only root may enter.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeOwnedDir, postgresUser, runsAsRoot } from "../../db/cluster-home";
import { supervised } from "./patroni";

describe("supervised", () => {
  const made: string[] = [];
  const home = process.cwd();
  afterEach(() => {
    process.chdir(home);
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it.runIf(runsAsRoot())(
    "as root, a process run as the postgres user starts in its own folder, whatever folder the caller is in",
    async () => {
      const user = postgresUser()!;
      const closed = mkdtempSync(path.join(tmpdir(), "eo-closed-"));
      chmodSync(closed, 0o700);
      const cache = mkdtempSync(path.join(tmpdir(), "eo-cache-"));
      chmodSync(cache, 0o755);
      made.push(closed, cache);
      const own = path.join(cache, "ha");
      makeOwnedDir(own, user, 0o700);

      process.chdir(closed);
      const child = supervised(
        "python",
        "/usr/bin/python3",
        ["-c", "import os; os.chdir(os.getcwd()); print('started in', os.getcwd())"],
        path.join(own, "python.log"),
        user,
      );
      await child.start();
      while (child.running()) await new Promise((r) => setTimeout(r, 20));

      expect(readFileSync(child.logPath, "utf8").trim()).toBe(`started in ${own}`);
    },
  );
});
