/**
 * A provider stand-in in the test's own process, so its spans reach the
 * test's tracer provider (the global stand-in runs in another process), and
 * an app that calls it, for the whole file. Both are there once started.
 */
import { afterAll, beforeAll } from "vitest";
import type { App } from "../../server/app";
import { startPspStandIn, type RunningPspStandIn } from "../../server/psp/stand-in";
import { WEBHOOK_SECRET } from "../payments/support";
import { appWith } from "../support/app";

export function standInInThisProcess(options: { slowMs: number }): { url: () => string; app: () => App } {
  let started: { standIn: RunningPspStandIn; app: App } | undefined;
  beforeAll(async () => {
    const standIn = await startPspStandIn({ port: 0, slowMs: options.slowMs, webhookSecret: WEBHOOK_SECRET });
    started = { standIn, app: appWith({ PSP_URL: standIn.url }) };
  });
  afterAll(async () => {
    await started?.standIn.close();
  });
  const ready = () => {
    if (!started) throw new Error("the stand-in is not started yet");
    return started;
  };
  return { url: () => ready().standIn.url, app: () => ready().app };
}
