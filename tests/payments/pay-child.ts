/**
 * The app as a process of its own, for faults.test.ts to kill with SIGKILL in
 * the middle of a payment: it opens the pool, then calls payments.create as
 * the tenant with the given key. With `acct_test_slow` the provider holds the
 * answer back, so the test can kill this process while the charge is in
 * flight — a real crash of the holder, not a simulation.
 * argv: <tenant id> <idempotency key> <amount> [destination, default acct_test_slow]
 */
import { openAppDatabase } from "../../server/database";
import { env } from "../../server/env";
import { app } from "../../server/app";

const [tenantId, key, amount, destination = "acct_test_slow"] = process.argv.slice(2) as [string, string, string, string?];
openAppDatabase(process.env.DATABASE_URL!, { max: 4, pooled: env.DATABASE_POOLED });
const caller = app.createCaller(
  await app.createContextInner({ tenant: { id: tenantId, name: "killed" }, headers: new Headers({ "Idempotency-Key": key }) }),
);
await caller.payments.create({ amount, currency: "EUR", destination });
process.stdout.write("finished\n");
