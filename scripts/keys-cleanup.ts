/** npm run keys:cleanup — deletes expired idempotency keys now, in throttled batches. */
import { ensureDatabase } from "../db/bootstrap";
import { closeDatabase } from "../db/client";

const booted = await ensureDatabase({ seed: false });
try {
  const { deleteExpiredKeys } = await import("../server/keys/runtime");
  const deleted = await deleteExpiredKeys();
  process.stdout.write(`Deleted ${deleted} expired idempotency keys.\n`);
} finally {
  await closeDatabase();
  await booted.embedded?.stop();
}
