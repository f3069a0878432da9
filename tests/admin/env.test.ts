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

/** `next.config.js` as Next.js loads it in `phase`: its default export is called with the phase. */
function loadNextConfig(phase: string, extra: Record<string, string>) {
  const { ADMIN_PASSWORD: _unset, ...inherited } = process.env;
  return spawnSync(
    process.execPath,
    ["--input-type=module", "-e", `const { default: config } = await import("./next.config.js"); await config(${JSON.stringify(phase)});`],
    {
      env: { ...inherited, NODE_ENV: "production", ...extra },
      encoding: "utf8",
    },
  );
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

  it("is checked by next.config.js: `next build` refuses a bad setting, naming it, and needs no admin password yet", () => {
    const bad = loadNextConfig("phase-production-build", { PSP_PORT: "4190" });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain("PSP_PORT: is a port that fetch refuses");
    expect(loadNextConfig("phase-production-build", {}).status).toBe(0);
    const serving = loadNextConfig("phase-production-server", {});
    expect(serving.status).not.toBe(0);
    expect(serving.stderr).toContain("ADMIN_PASSWORD: required when NODE_ENV=production");
  });
});
