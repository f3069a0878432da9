/**
 * `--help` (or `-h`) on every CLI of package.json: its usage on standard
 * output and exit 0, before a database or a build is touched (no embedded
 * cluster starts: the answer comes within the spawn's few seconds, with
 * DATABASE_URL pointing nowhere).
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

const CLIS = [
  ["scripts/start.ts", "npm start"],
  ["scripts/tenant.ts", "npm run --silent tenant -- create <name>"],
  ["scripts/operator.ts", "npm run operator -- add NAME --role operator|viewer"],
  ["scripts/keys-cleanup.ts", "npm run keys:cleanup"],
  ["scripts/keys-complete.ts", "npm run keys:complete [-- --tenant <id>]"],
  ["scripts/reconcile.ts", "npm run reconcile [-- --tenant <id>]"],
  ["scripts/migrate.ts", "npm run db:migrate"],
  ["bench/run.ts", "npm run bench [-- options]"],
] as const;

const run = (script: string, flag: string) =>
  spawnSync(process.execPath, ["--import", "tsx", script, flag], {
    encoding: "utf8",
    timeout: 30_000,
    // Nothing listens there: a CLI that went for its database instead of answering would fail, not hang.
    env: { ...process.env, DATABASE_URL: "postgres://nobody@127.0.0.1:9/none" },
  });

describe("--help on every CLI", () => {
  it.each(CLIS)("%s explains its usage and exits 0", (script, usage) => {
    for (const flag of ["--help", "-h"]) {
      const help = run(script, flag);
      expect(help.stderr).toBe("");
      expect(help.status).toBe(0);
      expect(help.stdout.split("\n")[0]).toBe(`Usage: ${usage}${usage.endsWith("viewer") ? " | remove NAME | list" : ""}`);
    }
  });
});

describe("npm start --help", () => {
  it("names every port it opens and the variable that moves each (issue 54)", () => {
    const help = run("scripts/start.ts", "--help").stdout;
    for (const [port, variable] of [
      ["3000", "PORT"],
      ["4010", "PSP_PORT"],
      ["54329", "EMBEDDED_PG_PORT"],
    ])
      expect(help).toMatch(new RegExp(`^ {2}${variable}=${port} `, "m"));
    expect(help).toMatch(/^ {2}DATABASE_URL +your PostgreSQL/m);
  });
});
