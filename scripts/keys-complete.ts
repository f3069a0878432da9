/**
 * npm run keys:complete [-- --tenant <id>] — one completer round now (for
 * cron, and for tests): finishes resumable keys whose client went away and
 * whose lease ran out, of every tenant or one. Prints one line per key it
 * took up, then a summary; exits 1 when a key needs attention, so a cron
 * job's mail says so.
 */
import "./use-running-server";
import { runCli } from "./cli";

const args = process.argv.slice(2);
const tenantFlag = args.indexOf("--tenant");
const tenantId = tenantFlag >= 0 ? args[tenantFlag + 1] : undefined;

runCli(async () => {
  const { completer } = await import("../server/app");
  const outcomes = await completer.completeDueKeys(tenantId === undefined ? {} : { tenantId });
  for (const o of outcomes) {
    const what = o.outcome === "completed" ? `completed (${o.status})` : `${o.outcome.replace("_", " ")}: ${o.detail}`;
    process.stdout.write(`${o.tenantId} ${o.key} ${what}\n`);
  }
  const completed = outcomes.filter((o) => o.outcome === "completed").length;
  process.stdout.write(`Completed ${completed} of ${outcomes.length} due idempotency keys.\n`);
  return outcomes.some((o) => o.outcome === "needs_attention") ? 1 : 0;
});
