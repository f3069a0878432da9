/**
 * A holder that dies: serves the harness app in a process of its own, takes
 * the key of one call and, at `point`, says "holding" and waits for ever,
 * for the test to SIGKILL it there: a crash with the key in progress (an
 * atomic holder's transaction open, a recoverable one's first recovery
 * point committed and its downstream call made).
 *
 *   node --import tsx test/holder-child.ts DATABASE_URL LEASE_MS PROCEDURE KEY POINT
 */
import { hooks, post, serve, type Flavour, type Point } from "./harness.js";

const [url, leaseMs, procedure, key, point] = process.argv.slice(2) as [string, string, Flavour, string, Point];
// The driver the suite runs on: an unpatched release of the matrix (POSTGRES_DRIVER_ENTRY), or the one node_modules has.
const { default: postgres } = (await import(process.env.POSTGRES_DRIVER_ENTRY ?? "postgres")) as typeof import("postgres");
const sql = postgres(url, { max: 5, onnotice: () => {} });
const app = await serve(sql, { leaseMs: Number(leaseMs) });
hooks.set(key, (at) => {
  if (at !== point) return;
  process.stdout.write("holding\n");
  return new Promise<never>(() => {});
});
void post(app.base, procedure, key, { tag: key, amount: 2500 });
