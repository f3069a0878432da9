/**
 * The lab's server-side simulations, each armed for one run (runs.ts) and
 * fired once, or (the provider down) held until the lab lifts it. Outside a lab run, and so whenever demo mode is off (the HTTP
 * edge enters a run only then), every function here returns at once.
 */
import { currentRun, isArmed, Lane, recordStep, stepsWritten, takeFault, type LabRun } from "./runs";

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

/**
 * The provider client's transport: inside a lab run whose provider is down,
 * every call fails as an unreachable host does (a TypeError with a cause,
 * what fetch raises), before anything leaves; every other call, and every
 * call outside a run, goes through the global fetch untouched.
 */
export const providerFetch: typeof fetch = async (input, init) => {
  const run = currentRun();
  if (run && (await isArmed("providerDown", run))) {
    throw new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED (the lab's provider is down)"), { code: "ECONNREFUSED" }) });
  }
  return fetch(input, init);
};

/** The provider is back for the run: its calls reach the provider again. Says whether it was down. */
export async function bringProviderBack(run: LabRun): Promise<boolean> {
  const wasDown = (await takeFault("providerDown", run)) === true;
  if (wasDown) recordStep(Lane.Provider, Lane.App, "the provider is reachable again (simulated outage over)", run);
  await stepsWritten(run.id);
  return wasDown;
}
