/**
 * A fresh PostgreSQL for one test run: a new database on DATABASE_URL's
 * server (dropped afterwards), or, without DATABASE_URL, an embedded cluster
 * in a scratch directory (the temporary folder, or as root the project cache:
 * see db/cluster-home.ts) on a free port (removed afterwards). Migrations
 * are applied before it is handed out.
 */
import { rmSync } from "node:fs";
import path from "node:path";
import postgres from "postgres";
import { scratchClusterParent } from "../../db/cluster-home";
import { freePort, startEmbeddedPostgres } from "../../db/embedded";
import { runMigrations } from "../../db/migrate";

export type FreshDatabase = { url: string; dispose: () => Promise<void> };

export { freePort };

export async function createFreshDatabase(label = "test"): Promise<FreshDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    const name = `eo_${label}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
    const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name} encoding 'UTF8' template template0`);
    await admin.end();
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    await runMigrations(url.toString());
    return {
      url: url.toString(),
      dispose: async () => {
        const a = postgres(serverUrl, { max: 1, onnotice: () => {} });
        await a.unsafe(`drop database if exists ${name} with (force)`);
        await a.end();
      },
    };
  }
  const dir = scratchClusterParent(label);
  const pg = await startEmbeddedPostgres({ dir: path.join(dir, "pg"), port: await freePort() }).catch((error: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  try {
    await runMigrations(pg.url);
  } catch (error) {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: pg.url,
    dispose: async () => {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
