/**
 * The production build of the current sources, made when missing or stale.
 * Shared by the run command and the tests that start a real server. A lock
 * in the checkout's state directory makes a second caller wait for the first
 * one's build and then use it ("another next build is running" otherwise).
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { projectRoot as root, stateDir } from "../db/cluster-home";
import { acquireFileLock } from "../db/file-lock";

export const bin = (name: string) => path.join(root, "node_modules", ".bin", name);

/** The production server of the build (server/serve.ts, `next start` with the edge in front); HOST and PORT from its environment. */
export const serverCommand = (): string[] => [process.execPath, "--import", "tsx", path.join(root, "server", "serve.ts")];
const STAMP = path.join(root, ".next", "eo-source-stamp");
const SOURCES = [
  "app",
  "server",
  "db",
  "instrumentation.ts",
  "instrumentation.node.ts",
  "proxy.ts",
  "next.config.js",
  "package-lock.json",
  "patches",
  "tsconfig.json",
];

/** A digest of every source file's path, size and mtime: cheap, and changes with any edit. */
function sourceStamp(): string {
  const hash = createHash("sha256");
  const visit = (p: string) => {
    if (!existsSync(p)) return;
    const st = statSync(p);
    if (st.isDirectory()) {
      for (const entry of readdirSync(p).sort()) if (entry !== "node_modules") visit(path.join(p, entry));
    } else {
      hash.update(`${path.relative(root, p)}:${st.size}:${st.mtimeMs}\n`);
    }
  };
  for (const s of SOURCES) visit(path.join(root, s));
  return hash.digest("hex");
}

const current = (stamp: string) =>
  existsSync(path.join(root, ".next", "BUILD_ID")) && existsSync(STAMP) && readFileSync(STAMP, "utf8") === stamp;

/** Builds unless a build of these sources exists; throws with one line when the build fails. */
export async function ensureBuild(log: (line: string) => void): Promise<void> {
  const stamp = sourceStamp();
  if (current(stamp)) return;
  mkdirSync(stateDir, { recursive: true });
  const release = await acquireFileLock(path.join(stateDir, "build.lock"), (holder) =>
    log(`Waiting for the build that ${holder} is running…`),
  );
  try {
    // The build we waited for may be the one we need.
    if (current(stamp)) return;
    log("No build of the current sources: running next build…");
    const build = spawnSync(bin("next"), ["build"], {
      cwd: root,
      stdio: ["ignore", 2, 2],
      env: { ...process.env, NODE_ENV: "production" },
    });
    if (build.status !== 0) throw new Error(`next build failed (exit code ${build.status ?? build.signal}); its output is above`);
    writeFileSync(STAMP, stamp);
  } finally {
    release();
  }
}
