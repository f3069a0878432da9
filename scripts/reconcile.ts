/**
 * npm run reconcile [-- --tenant <id>]: the ledger against the provider's
 * charges, every difference listed per payment; exits 1 when there is any.
 * A payment pending for less than the completer's budget is in flight, not
 * a difference: the completer settles it. The failure lab's payments are
 * left out and counted: its unprotected twin double-charges on purpose.
 */
import "./use-running-server";
import { app } from "../server/app";
import { DEMO_TENANT } from "../db/seed";
import { labPaymentIds } from "../server/lab/report";
import { reconcile } from "../server/reconcile/reconcile";
import { runCli } from "./cli";
import { answerHelp } from "./help";

answerHelp(`Usage: npm run reconcile [-- --tenant <id>]

The ledger against the provider's charges, every difference listed per payment.
Exits 1 when there is any. Needs the app (and its provider) running.`);

const args = process.argv.slice(2);
const tenantFlag = args.indexOf("--tenant");
const tenantId = tenantFlag >= 0 ? args[tenantFlag + 1] : undefined;

runCli(async (booted) => {
  const listed = await app.paymentProvider().listCharges();
  if (listed.kind !== "ok")
    throw new Error(`Cannot list the provider's charges at ${app.pspUrl()} (${listed.kind}); is the app (and its stand-in) running?`);
  const leaveOut = await labPaymentIds(booted.db, DEMO_TENANT.id);
  const differences = await reconcile(booted.db, listed.charges, { tenantId, pendingGraceMs: app.settleWithinMs(), leaveOut });
  const labCharges = listed.charges.filter((c) => c.reference !== null && leaveOut.has(c.reference)).length;
  const lab =
    leaveOut.size > 0
      ? ` Left out: ${leaveOut.size} payment(s) and ${labCharges} charge(s) of the failure lab (/lab), whose unprotected twin double-charges on purpose.`
      : "";
  if (differences.length === 0) {
    process.stdout.write(
      `Reconciled: the ledger matches the provider's ${listed.charges.length - labCharges} charges${tenantId ? ` for tenant ${tenantId}` : ""}.${lab}\n`,
    );
    return 0;
  }
  if (lab) process.stdout.write(`${lab.trim()}\n`);
  process.stdout.write(`${differences.length} difference(s):\n`);
  for (const d of differences) {
    const where = [d.paymentId, d.chargeId, d.eventId, d.transactionId].filter(Boolean).join(" ");
    process.stdout.write(`  ${d.kind.padEnd(22)} ${where.padEnd(50)} ${d.detail}\n`);
  }
  return 1;
});
