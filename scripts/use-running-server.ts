/**
 * Imported first by every CLI, before anything reads the environment: when a
 * server of this checkout runs on the database this CLI would use (the same
 * DATABASE_URL, or the same embedded data directory, or without
 * DATABASE_URL the checkout's HA database), the CLI takes that
 * server's database URL and provider from its run file (db/run-file.ts). So
 * `npm run tenant`, `reconcile`, `keys:cleanup` and `db:migrate` need no
 * variables while the server runs, and borrow its cluster rather than start
 * (and later stop) one of their own.
 */
import { clusterDir } from "../db/cluster-home";
import { runningServer } from "../db/run-file";

const databaseUrl = process.env.DATABASE_URL;
const server = runningServer((run) =>
  databaseUrl ? run.databaseUrl === databaseUrl : run.ha || run.embeddedDir === clusterDir(process.env.EMBEDDED_PG_DIR),
);
if (server) {
  process.env.DATABASE_URL = server.databaseUrl;
  if (!process.env.PSP_URL && !process.env.PSP_PORT) process.env.PSP_URL = server.pspUrl;
}
