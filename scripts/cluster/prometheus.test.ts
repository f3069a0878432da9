/**
 * The configuration `npm run cluster -- --prometheus` gives Prometheus is
 * valid, with the alert rules it names (promtool); and the Prometheus it
 * starts answers only with the run's password, so a DNS-rebinding page (any
 * Host, no credentials) reads nothing.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it, onTestFinished } from "vitest";
import { BAD_PORTS } from "../../server/env";
import { freePort } from "../../tests/support/database";
import { DEFAULT_PROMETHEUS_PORT, prometheusConfig, startPrometheus } from "./prometheus";

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

  it(
    "answers only with the run's password: no credentials, or a rebinding page's Host, get 401; the alerts link works",
    { timeout: 60_000 },
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "eo-prometheus-run-"));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const port = await freePort();
      const prometheus = await startPrometheus({ port, targets: ["127.0.0.1:3001"], runDir: dir });
      onTestFinished(() => prometheus.stop());
      const authorization = `Basic ${Buffer.from(`${prometheus.user}:${prometheus.password}`).toString("base64")}`;
      expect((await fetch(`${prometheus.url}/api/v1/status/config`)).status).toBe(401);
      expect((await fetch(`${prometheus.url}/api/v1/status/config`, { headers: { host: `rebind.attacker.example:${port}` } })).status).toBe(
        401,
      );
      expect(
        (
          await fetch(`${prometheus.url}/api/v1/status/config`, {
            headers: { authorization: `Basic ${Buffer.from("prometheus:guess").toString("base64")}` },
          })
        ).status,
      ).toBe(401);
      expect((await fetch(`${prometheus.url}/api/v1/status/config`, { headers: { authorization } })).status).toBe(200);
      expect((await fetch(prometheus.alertsUrl, { headers: { authorization } })).status).toBe(200);
      expect(new URL(prometheus.url).hostname).toBe("127.0.0.1");
    },
  );

  it("listens by default on a port fetch accepts", () => {
    expect(BAD_PORTS.has(DEFAULT_PROMETHEUS_PORT)).toBe(false);
  });
});
