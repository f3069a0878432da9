/** JUnit XML for CI: one testsuite, one testcase per check, the evidence in the failure's text, its kind (unsafe or deviation) as the failure's type. */
import type { CheckResult, Report } from "./types.js";

/** XML 1.0 text and attribute values: the five specials escaped, characters XML cannot hold replaced. */
export function xmlEscape(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "\uFFFD")
    .replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!);
}

const evidence = (c: CheckResult) =>
  [
    ...c.details,
    ...c.exchanges.map(
      (x) =>
        `${x.startedAt} ${x.label}: ${x.request.method} ${x.request.url} → ${x.answer ? `${x.answer.status} ${x.answer.body.slice(0, 300)}` : x.error}`,
    ),
  ].join("\n");

export function toJunit(report: Report): string {
  const failures = report.checks.filter((c) => c.verdict === "fail").length;
  const skipped = report.checks.filter((c) => c.verdict === "skip").length;
  const suite = `exactly-once-check ${report.profile}${report.trpc ? " trpc" : ""} ${report.target}`;
  const cases = report.checks.map((c) => {
    const open = `    <testcase classname="${xmlEscape(`exactly-once-check.${report.profile}`)}" name="${xmlEscape(c.name)}" time="${(c.ms / 1000).toFixed(3)}"`;
    if (c.verdict === "pass") return `${open}/>`;
    if (c.verdict === "skip") return `${open}>\n      <skipped message="${xmlEscape(c.summary)}"/>\n    </testcase>`;
    return `${open}>\n      <failure message="${xmlEscape(c.summary)}" type="${c.failure ?? "deviation"}">${xmlEscape(evidence(c))}</failure>\n    </testcase>`;
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="exactly-once-check" tests="${report.checks.length}" failures="${failures}" skipped="${skipped}" time="${(report.ms / 1000).toFixed(3)}">`,
    `  <testsuite name="${xmlEscape(suite)}" tests="${report.checks.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${(report.ms / 1000).toFixed(3)}" timestamp="${report.startedAt}">`,
    ...cases,
    "  </testsuite>",
    "</testsuites>",
    "",
  ].join("\n");
}
