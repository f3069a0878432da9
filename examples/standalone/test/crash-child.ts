/**
 * A process that dies in the middle of a payment: it runs `pay` with the key
 * it is given, the first phase commits (the recovery point "recorded"), the
 * provider charges, and its answer never comes back; the test SIGKILLs it
 * there, after it printed "charged".
 */
import postgres from "postgres";
import { createApp, databaseProvider } from "../src/app.js";

const [url, key] = process.argv.slice(2) as [string, string];
const sql = postgres(url, { max: 2, onnotice: () => {} });
// A short lease (the test's), so the test need not wait long before the key counts as abandoned.
const app = createApp(
  sql,
  {
    charge: async (charge) => {
      await databaseProvider(sql).charge(charge);
      process.stdout.write("charged\n");
      return new Promise(() => {});
    },
  },
  { leaseMs: 1_000 },
);
const caller = app.createCaller({ headers: new Headers({ "Idempotency-Key": key }), tenant: { id: "example" }, outcomes: [] });
await caller.pay({ amount: 2500, to: "acct_crash" });
