/**
 * The package's own tests (`npm test -w @exactly-once/trpc`): test/ on the
 * package's own PostgreSQL (test/global-setup.ts) and the unit tests beside
 * the sources. POSTGRES_DRIVER_ENTRY (the ESM entry of a postgres-js
 * installed elsewhere; scripts/test-matrix.sh sets it) runs them on that
 * release, unpatched, instead of the one node_modules resolves; the tests
 * read which one from POSTGRES_DRIVER_VERSION.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { defineConfig } from "vitest/config";

const driver = process.env.POSTGRES_DRIVER_ENTRY;

/** The release the suite runs on (3.x's cjs/ has a package.json of its own, hence the name check). */
function versionOf(entry: string): string {
  for (let dir = path.dirname(entry); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, "package.json");
    const manifest = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string }) : {};
    if (manifest.name === "postgres" && manifest.version) return manifest.version;
  }
  throw new Error(`no package.json of postgres above ${entry}`);
}

export default defineConfig({
  resolve: { alias: driver ? [{ find: /^postgres$/, replacement: driver }] : [] },
  test: {
    root: import.meta.dirname,
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { POSTGRES_DRIVER_VERSION: versionOf(driver ?? createRequire(import.meta.url).resolve("postgres")) },
  },
});
