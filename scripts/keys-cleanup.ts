/** npm run keys:cleanup — deletes expired idempotency keys now, in throttled batches. */
import "./use-running-server";
import { runCli } from "./cli";
import { answerHelp } from "./help";

answerHelp(`Usage: npm run keys:cleanup

Deletes expired idempotency keys now, in throttled batches, and prints how many.
It uses the running server's database, or DATABASE_URL, or the embedded cluster.`);

runCli(async () => {
  const { app } = await import("../server/app");
  const deleted = await app.deleteExpired();
  process.stdout.write(`Deleted ${deleted} expired idempotency keys.\n`);
  return 0;
});
