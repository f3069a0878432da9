/**
 * tests/foundation/driver.test.ts against a postgres-js installed elsewhere
 * (POSTGRES_DRIVER_ENTRY, its ESM entry file), for test-drivers.sh: the
 * repository's own vitest config, with this test alone (its own `include`:
 * mergeConfig would append to the repository's, running every test) and
 * `postgres` resolved to that copy, unpatched. POSTGRES_DRIVER_TESTS (comma-separated globs) runs other tests
 * against it instead, e.g. the middleware's own (tests/idempotency/**), as a check of the package on that release.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { defineConfig, mergeConfig } from "vitest/config";
import base from "../../../vitest.config.js";

const driver = process.env.POSTGRES_DRIVER_ENTRY;
if (!driver) throw new Error("POSTGRES_DRIVER_ENTRY must name the entry file of an installed postgres package (test-drivers.sh sets it)");

// The entry is <package>/src/index.js in both majors; the test picks a setting by the release it runs against.
const { version } = JSON.parse(readFileSync(path.resolve(driver, "../../package.json"), "utf8")) as { version: string };
const root = path.resolve(import.meta.dirname, "../../..");
const merged = mergeConfig(base, defineConfig({ root, resolve: { alias: [{ find: /^postgres$/, replacement: driver }] } }));
merged.test = {
  ...merged.test,
  include: process.env.POSTGRES_DRIVER_TESTS?.split(",") ?? ["tests/foundation/driver.test.ts"],
  env: { ...merged.test?.env, POSTGRES_DRIVER_VERSION: version },
};

export default merged;
