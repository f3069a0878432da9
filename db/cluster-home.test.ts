/** makeOwnedDir on a cache that does not exist yet: only the leaf is private, the postgres user reaches it (issue 59). */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeOwnedDir, postgresUser, runsAsRoot, unreachableAncestor } from "./cluster-home";

const modeOf = (dir: string) => statSync(dir).mode & 0o777;

describe("makeOwnedDir", () => {
  let root: string;
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const freshRoot = () => {
    root = mkdtempSync(path.join(tmpdir(), "eo-owned-"));
    // As the machine's /var/cache is: searchable by everyone.
    chmodSync(root, 0o755);
    return root;
  };

  it("creates the missing parents 0755 and only the leaf with its own mode, whatever the umask", () => {
    const cache = path.join(freshRoot(), "exactly-once", "clone-0123456789ab");
    const leaf = path.join(cache, "ha");
    const umask = process.umask(0o077);
    try {
      makeOwnedDir(leaf, undefined, 0o700);
    } finally {
      process.umask(umask);
    }
    expect(modeOf(path.join(root, "exactly-once"))).toBe(0o755);
    expect(modeOf(cache)).toBe(0o755);
    expect(modeOf(leaf)).toBe(0o700);
    expect(modeOf(root)).toBe(0o755);
  });

  it("leaves an existing directory's mode alone, the leaf included", () => {
    const existing = path.join(freshRoot(), "mine");
    mkdirSync(existing, { mode: 0o750 });
    chmodSync(existing, 0o750);
    makeOwnedDir(path.join(existing, "leaf"), undefined, 0o700);
    makeOwnedDir(existing, undefined, 0o700);
    expect(modeOf(existing)).toBe(0o750);
    expect(modeOf(path.join(existing, "leaf"))).toBe(0o700);
  });

  it.runIf(runsAsRoot())("as root, the postgres user enters its own directory inside a cache made on the way", () => {
    const user = postgresUser()!;
    const leaf = path.join(freshRoot(), "exactly-once", "clone-0123456789ab", "ha");
    makeOwnedDir(leaf, user, 0o700);
    expect(statSync(leaf).uid).toBe(user.uid);
    expect(unreachableAncestor(path.join(leaf, "etcd"), user)).toBeUndefined();
    // What etcd does first: list (and create in) its own directory, as the postgres user.
    const asPostgres = spawnSync("mkdir", [path.join(leaf, "etcd")], { uid: user.uid, gid: user.gid, encoding: "utf8" });
    expect(asPostgres.stderr).toBe("");
    expect(asPostgres.status).toBe(0);
  });
});
