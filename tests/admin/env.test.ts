/** Production refuses to start without an admin password; `next build`, which starts nothing, does not need one. */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

function loadEnv(extra: Record<string, string>) {
  const { ADMIN_PASSWORD: _unset, ...inherited } = process.env;
  return spawnSync(process.execPath, ["--import", "tsx", "-e", 'await import("./server/env.ts")'], {
    env: { ...inherited, NODE_ENV: "production", ...extra },
    encoding: "utf8",
  });
}

describe("the environment", () => {
  it("refuses NODE_ENV=production without ADMIN_PASSWORD, naming the variable", () => {
    const run = loadEnv({});
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain("ADMIN_PASSWORD: required when NODE_ENV=production");
  });

  it("starts in production with a password, and builds without one", () => {
    expect(loadEnv({ ADMIN_PASSWORD: "a long enough password" }).status).toBe(0);
    expect(loadEnv({ NEXT_PHASE: "phase-production-build" }).status).toBe(0);
  });

  it("rejects a password shorter than eight characters", () => {
    const run = loadEnv({ ADMIN_PASSWORD: "short" });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain("ADMIN_PASSWORD: must be at least 8 characters");
  });
});
