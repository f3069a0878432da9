/** npm run keys:cleanup — deletes expired idempotency keys now, in throttled batches. */
import "./use-running-server";
import { runCli } from "./cli";

runCli(async () => {
  const { deleteExpiredKeys } = await import("../server/keys/runtime");
  const deleted = await deleteExpiredKeys();
  process.stdout.write(`Deleted ${deleted} expired idempotency keys.\n`);
  return 0;
});
