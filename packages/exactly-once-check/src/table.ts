/** The terminal's view of a report: one row per check, then one line of totals. Evidence is cut to a line; `--json` has it whole. */
import type { CheckResult, Report } from "./types.js";

const MARK = { pass: "✓", fail: "✗", skip: "-" } as const;
export const EVIDENCE_CHARS = 160;

const clip = (s: string) => (s.length > EVIDENCE_CHARS ? `${s.slice(0, EVIDENCE_CHARS - 1)}…` : s);
/** "pass", "skip", or how it failed: "unsafe" or "deviation". */
const outcome = (c: CheckResult) => c.failure ?? c.verdict;

export const formatRow = (c: CheckResult) =>
  `${MARK[c.verdict]} ${c.name.padEnd(12)} ${outcome(c).padEnd(9)} ${`${c.ms} ms`.padStart(8)}  ${clip(c.summary)}`;

export function formatTable(report: Report): string {
  const n = (v: string) => report.checks.filter((c) => c.verdict === v).length;
  const kind = (k: string) => report.checks.filter((c) => c.failure === k).length;
  return [
    `  ${"check".padEnd(12)} ${"".padEnd(9)} ${"time".padStart(8)}  evidence`,
    ...report.checks.map(formatRow),
    `${report.checks.length} checks: ${n("pass")} passed, ${n("fail")} failed (${kind("unsafe")} unsafe, ${kind("deviation")} deviation), ${n("skip")} skipped in ${(report.ms / 1000).toFixed(1)} s — ${report.target} (profile ${report.profile}${report.trpc ? ", tRPC" : ""})`,
    "",
  ].join("\n");
}
