/** `npm run cluster -- --help` explains the options; an unknown one says where they are listed, and starts nothing. */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

const cluster = (...args: string[]) =>
  spawnSync(process.execPath, ["--import", "tsx", "scripts/cluster.ts", ...args], { encoding: "utf8", timeout: 30_000 });

describe("npm run cluster", () => {
  it("--help prints every option and exits 0", () => {
    const help = cluster("--help");
    expect(help.status).toBe(0);
    for (const option of [
      "--instances",
      "--port",
      "--instance-port",
      "--pooler-port",
      "--stats-port",
      "--prometheus",
      "--prometheus-port",
      "--ha",
      "--ha-port",
      "--ha-dir",
      "--async",
      "--help",
    ])
      expect(help.stdout).toContain(option);
  });

  it("an unknown option is one line naming it and --help, exit 1", () => {
    const wrong = cluster("--nope");
    expect(wrong.status).toBe(1);
    const lines = wrong.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^Cannot start the cluster: Unknown option '--nope'.*\(npm run cluster -- --help lists the options\)$/);
  });

  it("--ha-port, --ha-dir and --async without --ha are one line, exit 1, before anything starts", () => {
    for (const args of [["--async"], ["--ha-port", "6000"], ["--ha-dir", "/tmp/nowhere"]]) {
      const wrong = cluster(...args);
      expect(wrong.status).toBe(1);
      expect(wrong.stderr.trim()).toBe("Cannot start the cluster: --ha-port, --ha-dir and --async go with --ha");
    }
  });
});
