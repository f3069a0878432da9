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

  it("--help names every port and what moves it", () => {
    const help = cluster("--help").stdout;
    const ports = help.slice(help.indexOf("Ports"));
    for (const [port, mover] of [
      ["8080", "--port"],
      ["3001", "--instance-port"],
      ["6432", "--pooler-port"],
      ["4010", "PSP_PORT"],
      ["54329", "EMBEDDED_PG_PORT"],
      ["9090", "--prometheus-port"],
      ["5440, 5441", "--ha-port"],
      ["5442, 5443", "--ha-port"],
      ["5444, 5445", "--ha-port"],
      ["5446, 5447", "--ha-port"],
    ])
      expect(ports).toMatch(new RegExp(`^  ${port}\\b.*${mover}`, "m"));
    for (const what of ["stand-in", "Prometheus", "Patroni REST", "etcd", "PgBouncer", "PostgreSQL"]) expect(ports).toContain(what);
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
