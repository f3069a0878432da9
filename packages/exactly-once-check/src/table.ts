/** The terminal's view of a report: one row per check, then one line of totals. */
import type { CheckResult, Report } from "./types";

const MARK = { pass: "✓", fail: "✗", skip: "-" } as const;

export const formatRow = (c: CheckResult) => `${MARK[c.verdict]} ${c.name.padEnd(12)} ${c.verdict.padEnd(5)} ${`${c.ms} ms`.padStart(8)}  ${c.summary}`;

export function formatTable(report: Report): string {
  const n = (v: string) => report.checks.filter((c) => c.verdict === v).length;
  return [
    `  ${"check".padEnd(12)} ${"".padEnd(5)} ${"time".padStart(8)}  evidence`,
    ...report.checks.map(formatRow),
    `${report.checks.length} checks: ${n("pass")} passed, ${n("fail")} failed, ${n("skip")} skipped in ${(report.ms / 1000).toFixed(1)} s — ${report.target} (profile ${report.profile}${report.trpc ? ", tRPC" : ""})`,
    "",
  ].join("\n");
}
