/** The tenant CLI: a real process, against the run's database and against embedded PostgreSQL. */
import { execFile } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import postgres from "postgres";
import { describe, expect, inject, it } from "vitest";
import { scratchClusterParent } from "../../db/cluster-home";
import { startEmbeddedPostgres } from "../../db/embedded";
import { runMigrations } from "../../db/migrate";
import { app } from "../../server/app";
import { freePort } from "../support/database";

const run = promisify(execFile);

function tenantCli(name: string, env: Record<string, string>) {
  return run(process.execPath, ["--import", "tsx", "scripts/tenant.ts", "create", name], {
    env: { ...process.env, LOG_LEVEL: "silent", ...env },
  });
}

const products = (token: string) =>
  app.handleRest(new Request("http://t/api/v1/products", { headers: { authorization: `Bearer ${token}` } }));

describe("npm run tenant -- create <name>", () => {
  it("prints a token alone on the last line that authorizes the API; the database keeps only its hash", async () => {
    const { stdout } = await tenantCli("CLI Tenant", { DATABASE_URL: inject("databaseUrl") });
    const lines = stdout.trimEnd().split("\n");
    const token = lines.at(-1)!;
    expect(token).toMatch(/^eo_[A-Za-z0-9_-]{43}$/);
    const ok = await products(token);
    expect(ok.status).toBe(200);
    expect((await ok.json()).data.length).toBeGreaterThan(0);
    const stored = postgres(inject("databaseUrl"), { max: 1 });
    const leaks = await stored`select count(*)::int as n from api_tokens where token_hash = ${token} or prefix = ${token}`;
    await stored.end();
    expect(leaks[0]!.n).toBe(0);
    const wrong = await products(`${token.slice(0, -1)}x`);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("content-type")).toBe("application/problem+json");
  });

  it("explains its usage and exits non-zero without a name", async () => {
    await expect(tenantCli("", { DATABASE_URL: inject("databaseUrl") })).rejects.toMatchObject({ code: 2 });
  });

  it("with embedded PostgreSQL: borrows a running cluster without stopping it, or starts and stops its own", async () => {
    const dir = scratchClusterParent("cli");
    const env = { EMBEDDED_PG_DIR: path.join(dir, "pg"), EMBEDDED_PG_PORT: String(await freePort()) };
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    // Embedded PostgreSQL has no pooler in front, whatever the run's own database is.
    for (const name of ["DATABASE_URL", "DATABASE_POOLED", "MIGRATE_ON_START"]) delete childEnv[name];
    try {
      // Nothing runs yet: the CLI starts the cluster, creates the tenant, and stops it again.
      const first = await run(process.execPath, ["--import", "tsx", "scripts/tenant.ts", "create", "Embedded"], {
        env: { ...childEnv, LOG_LEVEL: "silent" },
      });
      expect(first.stdout.trimEnd().split("\n").at(-1)).toMatch(/^eo_/);
      expect(existsSync(path.join(env.EMBEDDED_PG_DIR, "postmaster.pid"))).toBe(false);
      // Now this process runs the cluster (as the server would): the CLI must leave it running.
      const pg = await startEmbeddedPostgres({ dir: env.EMBEDDED_PG_DIR, port: Number(env.EMBEDDED_PG_PORT) });
      await runMigrations(pg.url);
      const second = await run(process.execPath, ["--import", "tsx", "scripts/tenant.ts", "create", "Embedded 2"], {
        env: { ...childEnv, LOG_LEVEL: "silent" },
      });
      expect(second.stdout.trimEnd().split("\n").at(-1)).toMatch(/^eo_/);
      const client = postgres(pg.url, { max: 1 });
      const rows = await client`select name from tenants order by created_at`;
      await client.end();
      expect(rows.map((r) => r.name)).toEqual(["Embedded", "Embedded 2"]);
      await pg.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
