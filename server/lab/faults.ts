/**
 * The lab's server-side simulations, each armed for one run (runs.ts) and
 * fired once, or (the provider down) held until the lab lifts it. They reach
 * the app only through what the composition root plugs in: a wrapper of the
 * provider client's transport, a decorator of the client, and a variant of
 * the idempotency runtime. Outside a lab run each returns at once.
 */
import type { IdempotencyRuntime } from "@exactly-once/trpc";
import type { PspClient } from "../psp/client";
import { currentRun, isArmed, Lane, recordStep, stepsWritten, takeFault, type LabRun } from "./runs";

/**
 * The runtime a request of a crash run claims its key with: its lease cut to
 * the run's and never renewed, as a worker that will stop dead holds it, so
 * the next attempt must wait out that lease and take the key over.
 */
export function runtimeForRun<TTx>(base: IdempotencyRuntime<TTx>): IdempotencyRuntime<TTx> {
  const leaseMs = currentRun()?.faults.crashAfterChargeLeaseMs;
  if (leaseMs === undefined) return base;
  return { ...base, defaults: { ...base.defaults, leaseMs }, renewEveryMs: () => 0 };
}

/** After the provider charged: the worker stops dead (no release, no completion), once per run. */
export const crashAfterCharge = (client: PspClient): PspClient => ({
  ...client,
  charge: async (...args) => {
    const result = await client.charge(...args);
    const leaseMs = await takeFault("crashAfterChargeLeaseMs");
    if (leaseMs === undefined) return result;
    recordStep(Lane.App, Lane.App, {
      plain: `the server stops dead right after the charge, before saving it (simulated crash); its claim on the key runs out in ${leaseMs / 1000} s`,
      technical: `worker stops dead after the charge (simulated crash); its ${leaseMs} ms lease is not renewed`,
    });
    await stepsWritten(currentRun()!.id);
    // A promise that never settles: what a stopped worker leaves its callers.
    return new Promise<never>(() => undefined);
  },
});

/**
 * The provider client's transport: inside a lab run whose provider is down,
 * every call fails as an unreachable host does (a TypeError with a cause,
 * what fetch raises), before anything leaves; every other call, and every
 * call outside a run, goes through untouched.
 */
export const outageTransport =
  (next: typeof fetch): typeof fetch =>
  async (input, init) => {
    const run = currentRun();
    if (run && (await isArmed("providerDown", run))) {
      throw new TypeError("fetch failed", {
        cause: Object.assign(new Error("connect ECONNREFUSED (the lab's provider is down)"), { code: "ECONNREFUSED" }),
      });
    }
    return next(input, init);
  };

/** The provider is back for the run: its calls reach the provider again. Says whether it was down. */
export async function bringProviderBack(run: LabRun): Promise<boolean> {
  const wasDown = (await takeFault("providerDown", run)) === true;
  if (wasDown) recordStep(Lane.Provider, Lane.App, "the provider is reachable again (simulated outage over)", run);
  await stepsWritten(run.id);
  return wasDown;
}
