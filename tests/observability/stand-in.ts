/**
 * A provider stand-in in the test's own process, so its spans reach the
 * test's tracer provider (the global stand-in runs in another process): the
 * app calls it for the whole file. Returns its base URL, once started.
 */
import { afterAll, beforeAll } from "vitest";
import { env } from "../../server/env";
import { startPspStandIn, type RunningPspStandIn } from "../../server/psp/stand-in";
import { WEBHOOK_SECRET } from "../payments/support";

export function standInInThisProcess(options: { slowMs: number }): () => string {
  let standIn: RunningPspStandIn | undefined;
  let savedPspUrl: string | undefined;
  beforeAll(async () => {
    standIn = await startPspStandIn({ port: 0, slowMs: options.slowMs, webhookSecret: WEBHOOK_SECRET });
    savedPspUrl = env.PSP_URL;
    env.PSP_URL = standIn.url;
  });
  afterAll(async () => {
    env.PSP_URL = savedPspUrl;
    await standIn?.close();
  });
  return () => {
    if (!standIn) throw new Error("the stand-in is not started yet");
    return standIn.url;
  };
}
