import path from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { alias: { "@": path.resolve(import.meta.dirname) } },
  test: {
    include: ["**/*.test.ts"],
    // packages/trpc has a suite of its own on its own database: npm test -w @exactly-once/trpc (npm run test:package).
    exclude: ["node_modules/**", "e2e/**", ".next/**", ".data/**", "examples/**", "packages/trpc/**"],
    globalSetup: ["tests/global-setup.ts"],
    setupFiles: ["tests/setup.ts"],
    pool: "forks",
    // Vitest's default in a run is one file fewer than the cores: one at a time on two. Most files spend their time
    // waiting (PostgreSQL, the servers and children they start, leases running out), so a file per core halves the wall time.
    maxWorkers: "100%",
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { NODE_ENV: "test", LOG_LEVEL: process.env.LOG_LEVEL ?? "silent" },
  },
});
