/** The configuration `npm run cluster -- --prometheus` gives Prometheus is valid, with the alert rules it names (promtool). */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it, onTestFinished } from "vitest";
import { BAD_PORTS } from "../../server/env";
import { DEFAULT_PROMETHEUS_PORT, prometheusConfig } from "./prometheus";

const run = promisify(execFile);

describe("the cluster's Prometheus", () => {
  it("scrapes every instance's /api/metrics with ops/prometheus/alerts.yml, and promtool accepts it", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "eo-prometheus-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const config = prometheusConfig(["127.0.0.1:3001", "127.0.0.1:3002"]);
    expect(config).toContain("metrics_path: /api/metrics");
    expect(config).toContain('targets: ["127.0.0.1:3001", "127.0.0.1:3002"]');
    const file = path.join(dir, "prometheus.yml");
    writeFileSync(file, config);
    const { stdout } = await run("promtool", ["check", "config", file]);
    expect(stdout).toMatch(/SUCCESS: 1 rule files found/);
    expect(stdout).toMatch(/SUCCESS: [1-9]\d* rules found/);
  });

  it("listens by default on a port fetch accepts", () => {
    expect(BAD_PORTS.has(DEFAULT_PROMETHEUS_PORT)).toBe(false);
  });
});
