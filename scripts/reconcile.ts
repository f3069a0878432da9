/**
 * npm run reconcile [-- --tenant <id>]: the ledger against the provider's
 * charges, every difference listed per payment; exits 1 when there is any.
 * A payment pending for less than the completer's budget is in flight, not
 * a difference: the completer settles it.
 */
import "./use-running-server";
import { settleWithinMs } from "../server/keys/completer";
import { psp, pspUrl } from "../server/payments/provider";
import { reconcile } from "../server/reconcile/reconcile";
import { runCli } from "./cli";

const args = process.argv.slice(2);
const tenantFlag = args.indexOf("--tenant");
const tenantId = tenantFlag >= 0 ? args[tenantFlag + 1] : undefined;

runCli(async (booted) => {
  const listed = await psp().listCharges();
  if (listed.kind !== "ok") throw new Error(`Cannot list the provider's charges at ${pspUrl()} (${listed.kind}); is the app (and its stand-in) running?`);
  const differences = await reconcile(booted.db, listed.charges, { tenantId, pendingGraceMs: settleWithinMs() });
  if (differences.length === 0) {
    process.stdout.write(`Reconciled: the ledger matches the provider's ${listed.charges.length} charges${tenantId ? ` for tenant ${tenantId}` : ""}.\n`);
    return 0;
  }
  process.stdout.write(`${differences.length} difference(s):\n`);
  for (const d of differences) {
    const where = [d.paymentId, d.chargeId, d.eventId, d.transactionId].filter(Boolean).join(" ");
    process.stdout.write(`  ${d.kind.padEnd(22)} ${where.padEnd(50)} ${d.detail}\n`);
  }
  return 1;
});
