/**
 * exactly-once-check URL --data JSON [options]: runs the checks against an
 * Idempotency-Key endpoint, prints a table (progress on stderr while it
 * runs), optionally writes the whole history as JSON (credentials redacted)
 * and a JUnit report. Exit 0: every check passed or was skipped (or, with
 * `--fail-on unsafe`, none failed unsafe); 1: a check failed; 2: a usage
 * error, a URL that cannot be reached, or a setup the server refuses (one
 * line, no stack).
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { shownUrl } from "./http.js";
import { toJunit } from "./junit.js";
import { checkOptions, runChecks } from "./run.js";
import { formatRow, formatTable } from "./table.js";
import {
  CHECKS,
  FailureKind,
  PROFILE_NAMES,
  SetupError,
  UsageError,
  type CountScope,
  type Header,
  type ProfileName,
  type Report,
} from "./types.js";

const USAGE = `usage: exactly-once-check URL --data JSON [--data-alt JSON] [-H "Name: value"]...
    [--other-header "Name: value"]... [--count-url URL] [--count-scope credential|global]
    [--trpc] [--profile core|ietf|stripe|exactly-once] [--burst N] [--ttl SECONDS]
    [--fail-on any|unsafe] [--json FILE] [--redact NAME]... [--no-redact] [--junit FILE]`;

/** What --help prints after the usage: every option in a line (the README's table has the detail). */
const OPTIONS = `
  URL                   the endpoint: each request is a POST of --data as application/json
  --data JSON           a payload the server accepts
  --data-alt JSON       another valid payload for the mismatch check (default: --data with one field changed)
  -H "Name: value"      a header for every request, the count's too (a credential); repeatable
  --other-header "N: v" a second credential, replacing the same-named -H, for the scope check
  --count-url URL       a GET that counts what the endpoint creates (number, array, count/total, data array)
  --count-scope S       credential (the caller's resources) or global (everyone's); found out when not given
  --trpc                a switch, no value: URL is a tRPC mutation's own address
                        (e.g. http://127.0.0.1:3000/api/trpc/payments.create); its body is the input as is
  --profile P           core (default), ietf, stripe or exactly-once: which rules the server is held to
  --burst N             how many requests the burst check sends at once (default 20)
  --ttl SECONDS         the server's key retention; enables the expiry check (waits that long plus 1 s)
  --fail-on any|unsafe  exit 1 for any failed check (default), or only for an unsafe one
  --json FILE           every request and answer, credentials redacted
  --redact NAME         one more header to redact in --json; repeatable
  --no-redact           keep every header in --json (a URL's user:password is *** everywhere, always)
  --junit FILE          a JUnit report, one testcase per check
  -h, --help            this text

Exit 0: no check failed; 1: a check failed; 2: a usage error, nothing answers, or the server refuses the setup.`;

/** Header values --json leaves out unless --no-redact; --redact adds names. */
const SECRET_HEADERS = ["authorization", "proxy-authorization", "cookie", "set-cookie"];

/** The report with the values of `names` (request and answer headers) replaced. */
export function redact(report: Report, names: string[]): Report {
  const secret = new Set(names.map((n) => n.toLowerCase()));
  const clean = (h: Record<string, string>) =>
    Object.fromEntries(Object.entries(h).map(([k, v]) => [k, secret.has(k.toLowerCase()) ? "[redacted]" : v]));
  return {
    ...report,
    checks: report.checks.map((c) => ({
      ...c,
      exchanges: c.exchanges.map((x) => ({
        ...x,
        request: { ...x.request, headers: clean(x.request.headers) },
        ...(x.answer ? { answer: { ...x.answer, headers: clean(x.answer.headers) } } : {}),
      })),
    })),
  };
}

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
    throw new UsageError(`${what} "${shownUrl(text)}" is not a URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new UsageError(`${what} "${shownUrl(text)}" is not http(s)`);
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
        "count-scope": { type: "string" },
        profile: { type: "string", default: "core" },
        "fail-on": { type: "string", default: "any" },
        redact: { type: "string", multiple: true, default: [] },
        "no-redact": { type: "boolean", default: false },
        burst: { type: "string", default: "20" },
        ttl: { type: "string" },
        json: { type: "string" },
        junit: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message.split("\n")[0]!);
  }
  const { values: v, positionals } = parsed;
  if (v.help) return { help: true as const };
  if (positionals.length !== 1)
    throw new UsageError(positionals.length === 0 ? "missing URL" : `one URL expected, got ${positionals.length}`);
  if (v.data === undefined) throw new UsageError("missing --data");
  if (!(PROFILE_NAMES as readonly string[]).includes(v.profile))
    throw new UsageError(`--profile must be core, ietf, stripe or exactly-once, not "${v.profile}"`);
  if (v["fail-on"] !== "any" && v["fail-on"] !== "unsafe") throw new UsageError(`--fail-on must be any or unsafe, not "${v["fail-on"]}"`);
  const countScope = v["count-scope"];
  if (countScope !== undefined && countScope !== "credential" && countScope !== "global")
    throw new UsageError(`--count-scope must be credential or global, not "${countScope}"`);
  if (countScope !== undefined && v["count-url"] === undefined) throw new UsageError("--count-scope needs --count-url");
  const options = checkOptions({
    url: httpUrl(positionals[0]!, "URL"),
    data: json(v.data, "--data"),
    dataAlt: v["data-alt"] === undefined ? undefined : json(v["data-alt"], "--data-alt"),
    headers: v.header.map((h) => header(h, "-H")),
    otherHeaders: v["other-header"].map((h) => header(h, "--other-header")),
    countUrl: v["count-url"] === undefined ? undefined : httpUrl(v["count-url"], "--count-url"),
    countScope: countScope as CountScope | undefined,
    trpc: v.trpc,
    profile: v.profile as ProfileName,
    burst: integer(v.burst, "--burst", 2, 500),
    ttlSeconds: v.ttl === undefined ? undefined : integer(v.ttl, "--ttl", 1, 86_400),
  });
  const secrets = v["no-redact"] ? [] : [...SECRET_HEADERS, ...v.redact];
  return { help: false as const, options, jsonFile: v.json, junitFile: v.junit, failOn: v["fail-on"] as "any" | "unsafe", secrets };
}

async function main(argv: string[]): Promise<number> {
  const cli = parseCli(argv);
  if (cli.help) {
    process.stdout.write(`${USAGE}\n${OPTIONS}\n`);
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
  if (cli.jsonFile) writeFileSync(cli.jsonFile, `${JSON.stringify(redact(report, cli.secrets), null, 2)}\n`);
  if (cli.junitFile) writeFileSync(cli.junitFile, toJunit(report));
  return report.checks.some((c) => c.verdict === "fail" && (cli.failOn === "any" || c.failure === FailureKind.Unsafe)) ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const usage = error instanceof UsageError;
    const hint = usage && !(error instanceof SetupError) ? " (--help for usage)" : "";
    process.stderr.write(
      `exactly-once-check: ${usage ? "" : "internal error: "}${error instanceof Error ? error.message : String(error)}${hint}\n`,
    );
    process.exit(2);
  },
);
