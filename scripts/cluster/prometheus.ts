/**
 * Prometheus for `npm run cluster -- --prometheus`: Debian's `prometheus`
 * (the package that also brings promtool), scraping every instance's
 * `/api/metrics` directly (loopback, so no token) every 5 seconds and
 * evaluating `ops/prometheus/alerts.yml`. Its configuration and data live
 * in the cluster's run directory; it listens on 127.0.0.1 only, in a process
 * group of its own like the instances, and stops with the cluster.
 *
 * It answers only with a password made for the run (HTTP basic auth, its
 * bcrypt hash in Prometheus's web configuration; the banner shows it):
 * Prometheus has no Host check of its own, and a DNS-rebinding page, whose
 * name now resolves to 127.0.0.1, could otherwise read every metric, the
 * scrape configuration and the checkout's paths. Such a page cannot send
 * credentials it does not have.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, writeFileSync } from "node:fs";
import path from "node:path";
import bcrypt from "bcryptjs";
import { projectRoot } from "../../db/cluster-home";

const PROMETHEUS_BIN = "/usr/bin/prometheus";
const ALERT_RULES = path.join(projectRoot, "ops/prometheus/alerts.yml");
/** Prometheus's own default port; not one fetch refuses (see BAD_PORTS). */
export const DEFAULT_PROMETHEUS_PORT = 9090;

const READY_TIMEOUT_MS = 30_000;

type PrometheusOptions = { port: number; targets: string[]; runDir: string };

const PROMETHEUS_USER = "prometheus";

/** Prometheus's web configuration: basic auth for one user, with the bcrypt hash of the run's password. */
function prometheusWebConfig(password: string): string {
  return ["basic_auth_users:", `  ${PROMETHEUS_USER}: ${JSON.stringify(bcrypt.hashSync(password, 10))}`, ""].join("\n");
}

/** The scrape configuration: one job, every instance a target. */
export function prometheusConfig(targets: string[]): string {
  return [
    "global:",
    "  scrape_interval: 5s",
    "  evaluation_interval: 5s",
    "rule_files:",
    `  - ${JSON.stringify(ALERT_RULES)}`,
    "scrape_configs:",
    "  - job_name: exactly-once",
    "    metrics_path: /api/metrics",
    "    static_configs:",
    `      - targets: [${targets.map((t) => JSON.stringify(t)).join(", ")}]`,
    "",
  ].join("\n");
}

/**
 * Where the installed Prometheus shows its alerts: Debian's build ships the
 * classic UI only (its `/` leads to `/classic/graph`, and `/alerts` is a 404
 * there); upstream's serves `/alerts`.
 */
async function alertsPage(url: string, authorization: string): Promise<string> {
  const home = await fetch(`${url}/`, { headers: { authorization }, redirect: "manual" });
  return home.headers.get("location")?.startsWith("/classic/") ? "/classic/alerts" : "/alerts";
}

export async function startPrometheus(options: PrometheusOptions) {
  const dir = path.join(options.runDir, "prometheus");
  mkdirSync(dir, { recursive: true });
  const configPath = path.join(dir, "prometheus.yml");
  writeFileSync(configPath, prometheusConfig(options.targets));
  const password = randomBytes(18).toString("base64url");
  const webConfigPath = path.join(dir, "web.yml");
  writeFileSync(webConfigPath, prometheusWebConfig(password), { mode: 0o600 });
  const authorization = `Basic ${Buffer.from(`${PROMETHEUS_USER}:${password}`).toString("base64")}`;
  const logPath = path.join(options.runDir, "prometheus.log");
  const out = openSync(logPath, "w");
  const url = `http://127.0.0.1:${options.port}`;
  const child = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${configPath}`,
      `--web.config.file=${webConfigPath}`,
      `--storage.tsdb.path=${path.join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${options.port}`,
      "--log.level=warn",
    ],
    { stdio: ["ignore", out, out], detached: true },
  );
  closeSync(out);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid) process.kill(-child.pid, "SIGTERM");
    const timer = setTimeout(() => child.pid && child.exitCode === null && process.kill(-child.pid, "SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Prometheus exited with code ${child.exitCode} (log: ${logPath})`);
    const ready = await fetch(`${url}/-/ready`, { headers: { authorization }, signal: AbortSignal.timeout(1000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ready)
      return {
        url,
        alertsUrl: `${url}${await alertsPage(url, authorization)}`,
        logPath,
        user: PROMETHEUS_USER,
        password,
        stop,
      };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Prometheus did not become ready within ${READY_TIMEOUT_MS / 1000} s (log: ${logPath})`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
