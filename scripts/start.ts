/**
 * npm start — the run command. Builds when there is no build of the current
 * sources, then serves the production server on PORT (default 3000). The
 * server itself starts embedded PostgreSQL (or uses DATABASE_URL), migrates
 * and seeds (instrumentation.node.ts). SIGTERM/SIGINT stop everything.
 * Without ADMIN_PASSWORD the admin dashboard gets the documented demo
 * password "demo-admin" (production refuses to start with none at all).
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const bin = (name: string) => path.join(root, "node_modules", ".bin", name);
const STAMP = path.join(root, ".next", "eo-source-stamp");
const SOURCES = ["app", "server", "db", "instrumentation.ts", "instrumentation.node.ts", "next.config.js", "package-lock.json", "tsconfig.json"];

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

/** The demo's documented admin password; anything real sets its own ADMIN_PASSWORD. */
const DEMO_ADMIN_PASSWORD = "demo-admin";
if (!process.env.ADMIN_PASSWORD) {
  process.env.ADMIN_PASSWORD = DEMO_ADMIN_PASSWORD;
  // Demo secrets mean a demo: the failure lab's simulations are on (server/env.ts, DEMO_MODE).
  process.env.DEMO_MODE ??= "true";
  process.stderr.write(`ADMIN_PASSWORD is unset: /admin accepts the demo password "${DEMO_ADMIN_PASSWORD}".\n`);
}

const stamp = sourceStamp();
const current = existsSync(path.join(root, ".next", "BUILD_ID")) && existsSync(STAMP) && readFileSync(STAMP, "utf8") === stamp;
if (!current) {
  process.stderr.write("No build of the current sources: running next build…\n");
  const build = spawnSync(bin("next"), ["build"], { cwd: root, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, NODE_ENV: "production" } });
  if (build.status !== 0) process.exit(build.status ?? 1);
  writeFileSync(STAMP, stamp);
}

const port = process.env.PORT ?? "3000";
const server = spawn(bin("next"), ["start", "-p", port], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, NODE_ENV: "production", NEXT_MANUAL_SIG_HANDLE: "true" },
});
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => server.kill(signal));
}
server.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + 15 : 1)));
