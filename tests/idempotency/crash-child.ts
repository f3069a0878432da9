/**
 * A process that claims a key and then hangs at a chosen point, so a test
 * can kill it with SIGKILL: the real crash of a holder, not a simulation.
 * argv: <procedure: atomic|recoverable> <tenant id> <key> <hook point>
 */
import { openAppDatabase } from "../../server/database";
import { env } from "../../server/env";
import { caller, ensureEffectsTable, hooks, type Point } from "./fixture";

const [procedure, tenantId, key, point] = process.argv.slice(2) as ["atomic" | "recoverable", string, string, Point];
openAppDatabase(process.env.DATABASE_URL!, { max: 4, pooled: env.DATABASE_POOLED });
await ensureEffectsTable();
hooks.set(key, async (at) => {
  if (at !== point) return;
  process.stdout.write("holding\n");
  await new Promise(() => undefined);
});
const c = await caller({ id: tenantId, name: "crash", token: "" }, key);
await c[procedure]({ tag: key, amount: 13 });
