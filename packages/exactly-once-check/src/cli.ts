/**
 * exactly-once-check URL --data JSON [options]: runs the checks against an
 * Idempotency-Key endpoint, prints a table (progress on stderr while it
 * runs), optionally writes the whole history as JSON and a JUnit report.
 * Exit 0: every check passed or was skipped; 1: a check failed; 2: a usage
 * error or a URL that cannot be reached (one line, no stack).
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { toJunit } from "./junit";
import { checkOptions, runChecks } from "./run";
import { formatRow, formatTable } from "./table";
import { CHECKS, UsageError, type Header, type ProfileName } from "./types";

const USAGE = `usage: exactly-once-check URL --data JSON [--data-alt JSON] [-H "Name: value"]...
    [--other-header "Name: value"]... [--count-url URL] [--trpc]
    [--profile ietf|stripe|exactly-once] [--burst N] [--ttl SECONDS]
    [--json FILE] [--junit FILE]`;

function header(text: string, option: string): Header {
  const i = text.indexOf(":");
  const name = i > 0 ? text.slice(0, i).trim() : "";
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw new UsageError(`${option} "${text}": expected "Name: value"`);
  return [name, text.slice(i + 1).trim()];
}

function json(text: string, option: string): string {
  try {
    JSON.parse(text);
  } catch {
    throw new UsageError(`${option} is not valid JSON`);
  }
  return text;
}

function httpUrl(text: string, what: string): string {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new UsageError(`${what} "${text}" is not a URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new UsageError(`${what} "${text}" is not http(s)`);
  return text;
}

function integer(text: string, option: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${option} must be a whole number from ${min} to ${max}`);
  return n;
}

export function parseCli(argv: string[]) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        data: { type: "string" },
        "data-alt": { type: "string" },
        header: { type: "string", short: "H", multiple: true, default: [] },
        "other-header": { type: "string", multiple: true, default: [] },
        "count-url": { type: "string" },
        trpc: { type: "boolean", default: false },
        profile: { type: "string", default: "exactly-once" },
        burst: { type: "string", default: "20" },
        ttl: { type: "string" },
        json: { type: "string" },
        junit: { type: "string" },
        help: { type: "boolean", default: false },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message.split("\n")[0]!);
  }
  const { values: v, positionals } = parsed;
  if (v.help) return { help: true as const };
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? "missing URL" : `one URL expected, got ${positionals.length}`);
  if (v.data === undefined) throw new UsageError("missing --data");
  if (!["ietf", "stripe", "exactly-once"].includes(v.profile)) throw new UsageError(`--profile must be ietf, stripe or exactly-once, not "${v.profile}"`);
  const options = checkOptions({
    url: httpUrl(positionals[0]!, "URL"),
    data: json(v.data, "--data"),
    dataAlt: v["data-alt"] === undefined ? undefined : json(v["data-alt"], "--data-alt"),
    headers: v.header.map((h) => header(h, "-H")),
    otherHeaders: v["other-header"].map((h) => header(h, "--other-header")),
    countUrl: v["count-url"] === undefined ? undefined : httpUrl(v["count-url"], "--count-url"),
    trpc: v.trpc,
    profile: v.profile as ProfileName,
    burst: integer(v.burst, "--burst", 2, 500),
    ttlSeconds: v.ttl === undefined ? undefined : integer(v.ttl, "--ttl", 1, 86_400),
  });
  return { help: false as const, options, jsonFile: v.json, junitFile: v.junit };
}

async function main(argv: string[]): Promise<number> {
  const cli = parseCli(argv);
  if (cli.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // On a terminal each row replaces its "running" line; a CI log gets one short line per check, the table after them.
  const live = process.stderr.isTTY;
  const report = await runChecks(cli.options, ({ check, result }) => {
    if (!live) {
      if (result) process.stderr.write(`[${CHECKS.indexOf(check) + 1}/${CHECKS.length}] ${check}: ${result.verdict} (${result.ms} ms)\n`);
    } else process.stderr.write(result ? `\r\x1b[K${formatRow(result)}\n` : `  ${check} …`);
  });
  process.stdout.write(`\n${formatTable(report)}`);
  if (cli.jsonFile) writeFileSync(cli.jsonFile, `${JSON.stringify(report, null, 2)}\n`);
  if (cli.junitFile) writeFileSync(cli.junitFile, toJunit(report));
  return report.checks.some((c) => c.verdict === "fail") ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const usage = error instanceof UsageError;
    process.stderr.write(`exactly-once-check: ${usage ? "" : "internal error: "}${error instanceof Error ? error.message : String(error)}${usage ? " (--help for usage)" : ""}\n`);
    process.exit(2);
  },
);
