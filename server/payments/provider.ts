/** The app's one client for the payment provider (the stand-in unless PSP_URL names another). */
import { env } from "../env";
import { providerFetch } from "../lab/faults";
import { traceProviderCall } from "../lab/trace";
import { instrument } from "../observability";
import { createPspClient, type PspClient } from "../psp/client";
import { noteChargeAttempt } from "./charge-attempts";

export const pspUrl = () => env.PSP_URL ?? `http://127.0.0.1:${env.PSP_PORT}`;

let cached: { client: PspClient; key: string } | undefined;

/** Rebuilt when the settings change (tests shorten the timeout to provoke one). */
export function psp(): PspClient {
  const key = `${pspUrl()} ${env.PSP_TIMEOUT_MS}`;
  if (cached?.key !== key) cached = { client: createPspClient({
      baseUrl: pspUrl(),
      timeoutMs: env.PSP_TIMEOUT_MS,
      fetch: instrument.providerFetch(providerFetch),
      observe: (call) => {
        noteChargeAttempt(call);
        traceProviderCall(call);
      },
    }), key };
  return cached.client;
}
