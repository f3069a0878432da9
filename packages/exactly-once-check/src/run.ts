/** The checks in order, each with its evidence: the function behind the CLI, for test suites. */
import net from "node:net";
import { burst, inFlight } from "./checks/concurrent.js";
import { Probe, type Outcome } from "./checks/probe.js";
import { shownUrl } from "./http.js";
import { setup } from "./checks/setup.js";
import { expiry, keyFormat, mismatch, missingKey, replay, scope } from "./checks/sequential.js";
import { PROFILES } from "./profiles.js";
import { CountError, Target } from "./target.js";
import { CHECKS, FailureKind, UsageError, Verdict, type CheckName, type CheckOptions, type CheckResult, type Report } from "./types.js";

const RUN: Record<CheckName, (p: Probe) => Promise<Outcome>> = {
  replay,
  mismatch,
  burst,
  "in-flight": inFlight,
  "missing-key": missingKey,
  "key-format": keyFormat,
  scope,
  expiry,
};

export type Progress = { check: CheckName; result?: CheckResult };

/** Fails with a UsageError when nothing listens at the URL, before any check runs. */
export async function assertReachable(url: string, timeoutMs = 5000): Promise<void> {
  const u = new URL(url);
  const port = Number(u.port || (u.protocol === "https:" ? 443 : 80));
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect({ host: u.hostname.replace(/^\[|\]$/g, ""), port, timeout: timeoutMs });
    socket.once("connect", () => {
      socket.destroy();
      resolve();
    });
    socket.once("timeout", () => {
      socket.destroy();
      reject(new UsageError(`cannot reach ${u.host}: no connection within ${timeoutMs} ms`));
    });
    socket.once("error", (e: NodeJS.ErrnoException) => reject(new UsageError(`cannot reach ${u.host}: ${e.code ?? e.message}`)));
  });
}

export async function runChecks(options: CheckOptions, onProgress: (p: Progress) => void = () => undefined): Promise<Report> {
  const target = new Target(options, PROFILES[options.profile]);
  await assertReachable(options.url);
  if (options.countUrl) await assertReachable(options.countUrl);
  const startedAt = new Date().toISOString();
  const t0 = target.clock.now();
  await setup(target);
  const checks: CheckResult[] = [];
  for (const name of CHECKS) {
    onProgress({ check: name });
    const probe = new Probe(target);
    const t = target.clock.now();
    let outcome: Outcome;
    try {
      outcome = await RUN[name](probe);
    } catch (error) {
      if (!(error instanceof CountError)) throw error;
      probe.exchanges.push(error.exchange);
      outcome = { findings: [{ kind: FailureKind.Deviation, text: error.message }], summary: error.message };
    }
    const findings = "skip" in outcome ? [] : outcome.findings;
    const result: CheckResult = {
      name,
      verdict: "skip" in outcome ? Verdict.Skip : findings.length ? Verdict.Fail : Verdict.Pass,
      ...(findings.length
        ? { failure: findings.some((f) => f.kind === FailureKind.Unsafe) ? FailureKind.Unsafe : FailureKind.Deviation }
        : {}),
      summary: "skip" in outcome ? outcome.skip : outcome.summary,
      findings,
      details: probe.details,
      exchanges: probe.exchanges,
      ms: Math.round(target.clock.now() - t),
    };
    checks.push(result);
    onProgress({ check: name, result });
  }
  return {
    target: shownUrl(options.url),
    profile: options.profile,
    trpc: options.trpc,
    startedAt,
    ms: Math.round(target.clock.now() - t0),
    checks,
  };
}

/** Options with the CLI's defaults for what is not given. */
export function checkOptions(o: Pick<CheckOptions, "url" | "data"> & Partial<CheckOptions>): CheckOptions {
  return { headers: [], otherHeaders: [], trpc: false, profile: "core", burst: 20, timeoutMs: 30_000, ...o };
}
