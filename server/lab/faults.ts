/**
 * The lab's server-side simulations, each armed for one run (runs.ts) and
 * fired once. Outside a lab run, and so whenever demo mode is off (the HTTP
 * edge enters a run only then), every function here returns at once.
 */
import { currentRun, Lane, recordStep, stepsWritten, takeFault } from "./runs";

/** A promise that never settles: what a stopped worker leaves its callers. */
export const stopDead = (): Promise<never> => new Promise<never>(() => undefined);

/** After the provider charged: the worker stops dead, keeping only a short lease. */
export async function crashPointAfterCharge(h: { suspend(leaseMs: number): Promise<never> } | undefined): Promise<void> {
  const leaseMs = await takeFault("crashAfterChargeLeaseMs");
  if (leaseMs === undefined) return;
  recordStep(Lane.App, Lane.App, `worker stops dead after the charge (simulated crash); lease left: ${leaseMs} ms`);
  await stepsWritten(currentRun()!.id);
  if (h) await h.suspend(leaseMs);
  await stopDead();
}
