/**
 * The app's one client for the payment provider (the stand-in unless PSP_URL
 * names another), built by the composition root with its plug-ins (the
 * failure lab, metrics): observers of every call, wrappers of its transport
 * and decorators of the client. Handlers get it in their context.
 */
import type { Db } from "../../db/client";
import { DEFAULT_PSP_PORT, type Env } from "../env-schema";
import { createPspClient, type ObservedCall, type PspClient } from "../psp/client";
import { noteChargeAttempt } from "./charge-attempts";

/**
 * The stand-in this process started, once it listens: its port may not be
 * PSP_PORT's (a taken default is traded for a free one). On `globalThis`
 * because Next.js loads start-up and the routes in bundles of their own.
 */
const standIn = globalThis as { __eoStandInUrl?: string };

/** Start-up names the stand-in it started; every later call goes there. */
export function useStandIn(url: string): void {
  standIn.__eoStandInUrl = url;
}

export type ProviderSettings = Pick<Env, "PSP_URL" | "PSP_PORT" | "PSP_TIMEOUT_MS">;

/** Where the provider answers: PSP_URL, else the stand-in start-up started, else where it would listen. */
export const pspUrl = (settings: ProviderSettings) =>
  settings.PSP_URL ?? standIn.__eoStandInUrl ?? `http://127.0.0.1:${settings.PSP_PORT ?? DEFAULT_PSP_PORT}`;

export type ProviderPlugin = {
  /** Told of every attempt of every call: its downstream key, status or error, and time. */
  observe?: (call: ObservedCall) => void;
  /** Wraps the HTTP transport every call goes through. */
  transport?: (next: typeof fetch) => typeof fetch;
  /** Wraps the client the app's code calls. */
  decorate?: (client: PspClient) => PspClient;
};

/**
 * The provider as the app calls it, with `plugins` applied in order; `db`
 * is the app's pool once opened, where each charge attempt is stored before
 * the call returns, so the confirmation page finds it on any instance. The
 * client is rebuilt when where it answers changes: start-up learns the
 * stand-in's port only after the app is built.
 */
export function createProvider(db: () => Db, settings: ProviderSettings, plugins: readonly ProviderPlugin[]): () => PspClient {
  const observeCall = async (call: ObservedCall) => {
    for (const p of plugins) p.observe?.(call);
    await noteChargeAttempt(db(), call);
  };
  let cached: { client: PspClient; key: string } | undefined;
  return () => {
    const baseUrl = pspUrl(settings);
    const key = `${baseUrl} ${settings.PSP_TIMEOUT_MS}`;
    if (cached?.key !== key) {
      const transport = plugins.reduce<typeof fetch>((next, p) => p.transport?.(next) ?? next, fetch);
      const client = createPspClient({ baseUrl, timeoutMs: settings.PSP_TIMEOUT_MS, fetch: transport, observe: observeCall });
      cached = { client: plugins.reduce((c, p) => p.decorate?.(c) ?? c, client), key };
    }
    return cached.client;
  };
}
