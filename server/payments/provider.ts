/**
 * The app's one client for the payment provider (the stand-in unless PSP_URL
 * names another). Plug-ins (the failure lab, metrics) reach it through its
 * ports, subscribed by the composition root: an observer of every call, a
 * wrapper of its transport and a decorator of the client.
 */
import { database } from "../../db/client";
import { env } from "../env";
import { createPort } from "../ports";
import { createPspClient, type ObservedCall, type PspClient } from "../psp/client";
import { noteChargeAttempt } from "./charge-attempts";

export const pspUrl = () => env.PSP_URL ?? `http://127.0.0.1:${env.PSP_PORT}`;

export type ProviderPlugin = {
  /** Wraps the HTTP transport every call goes through. */
  transport?: (next: typeof fetch) => typeof fetch;
  /** Wraps the client the app's code calls. */
  decorate?: (client: PspClient) => PspClient;
};

const calls = createPort<ObservedCall>("provider.observe");
/** Told of every attempt of every call: its downstream key, status or error, and time. */
export const observeProvider = calls.subscribe;

/** The attempt is stored before the call returns, so the confirmation page finds it on any instance. */
async function observeCall(call: ObservedCall): Promise<void> {
  calls.emit(call);
  await noteChargeAttempt(database().db, call);
}

const plugins: ProviderPlugin[] = [];
let cached: { client: PspClient; key: string } | undefined;

export function plugIntoProvider(plugin: ProviderPlugin): void {
  plugins.push(plugin);
  cached = undefined;
}

/** Rebuilt when the settings change (tests shorten the timeout to provoke one). */
export function psp(): PspClient {
  const key = `${pspUrl()} ${env.PSP_TIMEOUT_MS}`;
  if (cached?.key !== key) {
    const transport = plugins.reduce<typeof fetch>((next, p) => p.transport?.(next) ?? next, fetch);
    const client = createPspClient({ baseUrl: pspUrl(), timeoutMs: env.PSP_TIMEOUT_MS, fetch: transport, observe: observeCall });
    cached = { client: plugins.reduce((c, p) => p.decorate?.(c) ?? c, client), key };
  }
  return cached.client;
}
