/**
 * npm run keys:complete [-- --tenant <id>] — one completer round now (for
 * cron, and for tests): finishes resumable keys whose client went away and
 * whose lease ran out, of every tenant or one. Prints one line per key it
 * took up, then a summary; exits 1 while any key needs attention (one this
 * round gave up on, or one an earlier round did and nobody has finished
 * since), so a cron job's mail says so until an operator has looked.
 */
import "./use-running-server";
import { runCli } from "./cli";
import { answerHelp } from "./help";

answerHelp(`Usage: npm run keys:complete [-- --tenant <id>]

One completer round now: finishes resumable keys whose client went away and
whose lease ran out (of every tenant, or one), one line per key, then a summary.
Exits 1 while any key needs attention, so a cron job's mail says so.`);

const args = process.argv.slice(2);
const tenantFlag = args.indexOf("--tenant");
const tenantId = tenantFlag >= 0 ? args[tenantFlag + 1] : undefined;

runCli(async () => {
  const [{ app }, { database }, { needsAttention }] = await Promise.all([
    import("../server/app"),
    import("../db/client"),
    import("@exactly-once/trpc"),
  ]);
  const outcomes = await app.completer.completeDueKeys(tenantId === undefined ? {} : { tenantId });
  for (const o of outcomes) {
    const what = o.outcome === "completed" ? `completed (${o.status})` : `${o.outcome.replace("_", " ")}: ${o.detail}`;
    process.stdout.write(`${o.tenantId} ${o.key} ${what}\n`);
  }
  const completed = outcomes.filter((o) => o.outcome === "completed").length;
  process.stdout.write(`Completed ${completed} of ${outcomes.length} due idempotency keys.\n`);
  const { sql } = database();
  const tenant = tenantId === undefined ? sql`` : sql`and k.tenant_id = ${tenantId}`;
  const [waiting] = await sql<
    { n: number }[]
  >`select count(*)::int as n from idempotency_keys k where ${needsAttention(sql, "k")} ${tenant}`;
  if (waiting!.n > 0) process.stdout.write(`${waiting!.n} idempotency key(s) need attention: see /admin, or resume them there.\n`);
  return waiting!.n > 0 ? 1 : 0;
});
