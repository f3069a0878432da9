/**
 * The CLI as CI uses it: the binary in a child process against gallery
 * servers, its exit codes, its files, and its one-line refusals.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toJunit, xmlEscape, type Report } from "../src/index";
import { startGalleryServer } from "./gallery";

const BIN = path.join(import.meta.dirname, "..", "bin", "exactly-once-check.js");
const DATA = '{"amount":"1.00","currency":"EUR","destination":"acct_1"}';

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("exit", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Well-formed enough for a CI parser: outside tags no raw `<`, `>` or bare `&`; inside, attributes quoted and escaped. */
function assertWellFormed(xml: string): void {
  const tags = xml.match(/<[^<>]*>/g) ?? [];
  for (const tag of tags)
    expect(tag).toMatch(/^<(\?xml( [a-z]+="[^"<&]*")*\?|\/?[a-zA-Z]+( [a-z]+="([^"<&]|&(amp|lt|gt|quot|apos);)*")*\/?)>$/);
  const text = xml.replace(/<[^<>]*>/g, "");
  expect(text).not.toMatch(/[<>]/);
  expect(text).not.toMatch(/&(?!(amp|lt|gt|quot|apos);)/);
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "eoc-cli-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("exactly-once-check", () => {
  it("exits 0 against a correct server and writes the history and a JUnit report", async () => {
    const server = await startGalleryServer({ ttlMs: 1000 });
    try {
      const json = path.join(dir, "ok.json");
      const junit = path.join(dir, "ok.xml");
      const run = await cli([
        server.url,
        "--data",
        DATA,
        "-H",
        "Authorization: Bearer one",
        "--other-header",
        "Authorization: Bearer two",
        "--count-url",
        server.url,
        "--ttl",
        "1",
        "--json",
        json,
        "--junit",
        junit,
      ]);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toMatch(/8 checks: 7 passed, 0 failed \(0 unsafe, 0 deviation\), 1 skipped/);
      expect(run.stderr).toMatch(/^\[3\/8\] burst: pass \(\d+ ms\)$/m);
      const text = readFileSync(json, "utf8");
      // Credentials stay out of the file unless --no-redact.
      expect(text).not.toMatch(/Bearer (one|two)/);
      expect(text).toMatch(/"authorization": "\[redacted\]"/i);
      const report = JSON.parse(text) as Report;
      expect(report.checks.map((c) => c.name)).toEqual([
        "replay",
        "mismatch",
        "burst",
        "in-flight",
        "missing-key",
        "key-format",
        "scope",
        "expiry",
      ]);
      const burst = report.checks.find((c) => c.name === "burst")!;
      expect(burst.exchanges.filter((x) => x.label.startsWith("burst #"))).toHaveLength(20);
      expect(burst.exchanges.every((x) => typeof x.startedAt === "string" && x.answeredMs >= x.sentMs)).toBe(true);
      const xml = readFileSync(junit, "utf8");
      assertWellFormed(xml);
      expect(xml).toMatch(/<testsuites name="exactly-once-check" tests="8" failures="0" skipped="1"/);
    } finally {
      await server.stop();
    }
  });

  it("never writes a URL's user:password: not to stdout, --json (even with --no-redact) or --junit", async () => {
    const server = await startGalleryServer({ ttlMs: 1000 });
    try {
      const json = path.join(dir, "userinfo.json");
      const junit = path.join(dir, "userinfo.xml");
      const withUserinfo = server.url.replace("http://", "http://operator:s3cret-pw@");
      const run = await cli([
        withUserinfo,
        "--data",
        DATA,
        "-H",
        "Authorization: Bearer one",
        "--burst",
        "5",
        "--json",
        json,
        "--junit",
        junit,
        "--no-redact",
      ]);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      const shown = server.url.replace("http://", "http://***@");
      expect(run.stdout).toContain(shown);
      for (const text of [run.stdout, run.stderr, readFileSync(json, "utf8"), readFileSync(junit, "utf8")]) {
        expect(text).not.toContain("s3cret-pw");
        expect(text).not.toContain("operator:");
      }
      // --no-redact still keeps the headers it was asked to keep.
      expect(readFileSync(json, "utf8")).toContain("Bearer one");
      expect(readFileSync(json, "utf8")).toContain(shown);

      const refused = await cli(["ftp://operator:s3cret-pw@127.0.0.1/x", "--data", DATA]);
      expect(refused.code).toBe(2);
      expect(refused.stderr.trim()).toBe('exactly-once-check: URL "ftp://***@127.0.0.1/x" is not http(s) (--help for usage)');
    } finally {
      await server.stop();
    }
  });

  it("exits 1 when a check fails, and says which in the JUnit report", async () => {
    const server = await startGalleryServer({ flaw: "no-fingerprint", ttlMs: 1000 });
    try {
      const junit = path.join(dir, "fail.xml");
      const run = await cli([server.url, "--data", DATA, "-H", "Authorization: Bearer one", "--junit", junit, "--burst", "5"]);
      expect(run.code, run.stdout + run.stderr).toBe(1);
      expect(run.stdout).toMatch(/✗ mismatch\s+unsafe/);
      expect(run.stdout).toMatch(/8 checks: 4 passed, 1 failed \(1 unsafe, 0 deviation\), 3 skipped/);
      const xml = readFileSync(junit, "utf8");
      assertWellFormed(xml);
      expect(xml).toMatch(
        /<testcase classname="exactly-once-check.core" name="mismatch" time="[\d.]+">\n\s+<failure message="a silent success[^"]*" type="unsafe">/,
      );
      expect(xml).toMatch(/<skipped message="needs --other-header/);
    } finally {
      await server.stop();
    }
  });

  it("exits 0 with --fail-on unsafe when the only failure is a deviation, and the table says which kind", async () => {
    const server = await startGalleryServer({ flaw: "byte-fingerprint", ttlMs: 1000 });
    try {
      const args = [server.url, "--data", DATA, "-H", "Authorization: Bearer one", "--profile", "exactly-once", "--burst", "5"];
      const gated = await cli(args);
      expect(gated.code, gated.stdout + gated.stderr).toBe(1);
      expect(gated.stdout).toMatch(/✗ replay\s+deviation .*fields reordered was refused \(422\)/);
      const lenient = await cli([...args, "--fail-on", "unsafe"]);
      expect(lenient.code, lenient.stdout + lenient.stderr).toBe(0);
      expect(lenient.stdout).toMatch(/1 failed \(0 unsafe, 1 deviation\)/);
      // Evidence is cut to a line in the table.
      for (const row of lenient.stdout.split("\n").filter((l) => /^[✓✗-] /.test(l))) expect(row.length).toBeLessThanOrEqual(40 + 160);
    } finally {
      await server.stop();
    }
  });

  it("stops with exit 2 and one line when the setup is wrong, before any check", async () => {
    const server = await startGalleryServer({ ttlMs: 1000 });
    try {
      for (const [args, message] of [
        [[server.url, "--data", DATA], /^exactly-once-check: the server refused the credential \(401\): check -H$/],
        [
          [server.url, "--data", '{"currency":"EUR","n":1}', "-H", "Authorization: Bearer one"],
          /^exactly-once-check: the server refused --data \(400 .*amount is required.*\): give a --data \(and -H\) it accepts$/,
        ],
        [
          [server.url, "--data", DATA, "-H", "Authorization: Bearer one", "--count-url", `${server.url}/nope`],
          /^exactly-once-check: --count-url: 404 in \d+ ms; give a GET that counts what the endpoint creates$/,
        ],
      ] as [string[], RegExp][]) {
        const run = await cli(args);
        expect(run.code, run.stdout + run.stderr).toBe(2);
        expect(run.stderr.trim()).toMatch(message);
        expect(run.stdout).toBe("");
      }
    } finally {
      await server.stop();
    }
  });

  it("exits 2 with one line for a usage error", async () => {
    for (const [args, message] of [
      [[], /missing URL/],
      [["http://127.0.0.1:9/x"], /missing --data/],
      [["http://127.0.0.1:9/x", "--data", "{nope"], /--data is not valid JSON/],
      [["http://127.0.0.1:9/x", "--data", DATA, "--profile", "paypal"], /--profile must be core, ietf, stripe or exactly-once/],
      [["http://127.0.0.1:9/x", "--data", DATA, "--fail-on", "some"], /--fail-on must be any or unsafe/],
      [["http://127.0.0.1:9/x", "--data", DATA, "--count-scope", "global"], /--count-scope needs --count-url/],
      [["http://127.0.0.1:9/x", "--data", DATA, "-H", "no colon"], /-H "no colon": expected "Name: value"/],
      [["http://127.0.0.1:9/x", "--data", DATA, "--burst", "1"], /--burst must be a whole number from 2 to 500/],
      [["http://127.0.0.1:9/x", "--data", DATA, "--frobnicate"], /Unknown option '--frobnicate'/],
    ] as [string[], RegExp][]) {
      const run = await cli(args);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stderr.trim().split("\n"), run.stderr).toHaveLength(1);
      expect(run.stdout).toBe("");
    }
  });

  it("--help and -h explain every option the usage line names, one line each, and exit 0", async () => {
    for (const flag of ["--help", "-h"]) {
      const run = await cli([flag]);
      expect(run.code).toBe(0);
      const [usage, options] = run.stdout.split("\n\n");
      const named = new Set(usage!.match(/(?<=\[)-[-a-zA-Z]+/g));
      expect(named.size).toBeGreaterThan(10);
      for (const option of named) expect(options, option).toMatch(new RegExp(`^ {2}(-h, )?${option}\\b`, "m"));
      expect(options).toMatch(/^ {2}--trpc +a switch, no value/m);
    }
  });

  it("exits 2 with one line when the URL cannot be reached", async () => {
    // A port that was free a moment ago: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const run = await cli([`http://127.0.0.1:${port}/payments`, "--data", DATA]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(`exactly-once-check: cannot reach 127.0.0.1:${port}: ECONNREFUSED (--help for usage)`);
  });
});

describe("the JUnit report", () => {
  it("escapes what a server answered, whatever it was", () => {
    const nasty = `</failure><x a="1" b='2'>&amp; ]]> \u0001\u001f\uFFFE`;
    expect(xmlEscape(nasty)).toBe("&lt;/failure&gt;&lt;x a=&quot;1&quot; b=&apos;2&apos;&gt;&amp;amp; ]]&gt; \uFFFD\uFFFD\uFFFD");
    const report: Report = {
      target: `http://h/"x"&<y>`,
      profile: "exactly-once",
      trpc: false,
      startedAt: new Date(0).toISOString(),
      ms: 5,
      checks: [
        {
          name: "replay",
          verdict: "fail",
          failure: "unsafe",
          summary: nasty,
          findings: [{ kind: "unsafe", text: nasty }],
          details: [nasty],
          exchanges: [
            {
              label: nasty,
              request: { method: "POST", url: "http://h/", headers: {} },
              startedAt: "t",
              sentMs: 0,
              answeredMs: 1,
              answer: { status: 500, headers: {}, body: nasty },
            },
          ],
          ms: 1,
        },
      ],
    };
    assertWellFormed(toJunit(report));
  });
});
