/**
 * The checkout's tRPC client: the app's one client (app/_trpc/client.tsx),
 * with every attempt of an idempotent mutation recorded per key in
 * sessionStorage so the page — and the confirmation after it — can show
 * what happened.
 */
import type { Attempt } from "@exactly-once/trpc/client";
import { createAppClient } from "../../_trpc/client";

const ATTEMPTS = "eo-checkout:attempts:";

/**
 * When this page loaded. Attempts recorded before it belong to a page that
 * was reloaded: one with no outcome was cut off, and says nothing about the
 * connection now.
 */
export const PAGE_LOADED_AT = typeof window === "undefined" ? 0 : Date.now();
const listeners = new Set<(attempt: Attempt) => void>();

export function attemptsFor(key: string): Attempt[] {
  try {
    return JSON.parse(sessionStorage.getItem(ATTEMPTS + key) ?? "[]") as Attempt[];
  } catch {
    return [];
  }
}

function record(attempt: Attempt) {
  sessionStorage.setItem(ATTEMPTS + attempt.key, JSON.stringify([...attemptsFor(attempt.key), attempt]));
  for (const listener of listeners) listener(attempt);
}

/** The stored attempts of a key as text: a stable snapshot for useSyncExternalStore. */
export function attemptsText(key: string): string {
  return sessionStorage.getItem(ATTEMPTS + key) ?? "[]";
}

export function onAttempt(listener: (attempt: Attempt) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export const checkoutClient = createAppClient({ onAttempt: record });
