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
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { NODE_ENV: "test", LOG_LEVEL: process.env.LOG_LEVEL ?? "silent" },
  },
});
