/**
 * The package's own tests (`npm test -w @exactly-once/trpc`): test/ on the
 * package's own PostgreSQL (test/global-setup.ts) and the unit tests beside
 * the sources. POSTGRES_DRIVER_ENTRY (the ESM entry of a postgres-js
 * installed elsewhere; scripts/test-matrix.sh sets it) runs them on that
 * release, unpatched, instead of the one node_modules resolves.
 */
import { defineConfig } from "vitest/config";

const driver = process.env.POSTGRES_DRIVER_ENTRY;

export default defineConfig({
  resolve: { alias: driver ? [{ find: /^postgres$/, replacement: driver }] : [] },
  test: {
    root: import.meta.dirname,
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
