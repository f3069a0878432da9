/**
 * Waiting in tests of concurrent calls: a promise resolved from outside, a
 * barrier for n parties, polling until a condition holds, a plain pause, the
 * TRPCError a call ends with, and the calls that reached the middleware.
 * Nothing here knows the test app.
 */
import { TRPCError } from "@trpc/server";
import { expect } from "vitest";
import type { IdempotencyContext } from "../src/index.js";

/** A promise and the function that resolves it. */
export function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** A barrier for `n` parties: each call resolves once all `n` have called. */
export function barrier(n: number): () => Promise<void> {
  const all = deferred();
  let arrived = 0;
  return () => {
    if (++arrived === n) all.resolve();
    return all.promise;
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `condition` until it holds. */
export async function until(condition: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await condition())) await sleep(10);
}

/** The TRPCError a call failed with (fails the test if it did not fail that way). */
export async function trpcError(promise: Promise<unknown>): Promise<TRPCError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TRPCError);
  return error as TRPCError;
}

/**
 * Calls that reached the middleware, by key, counted by the app's `around.call`: a duplicate sent
 * while its key is held may take a while to get there under load, and waits once it has.
 */
export function arrivals() {
  const byKey = new Map<string, number>();
  const call = <T>(request: IdempotencyContext, run: () => Promise<T>) => {
    const key = request.headers.get("idempotency-key") ?? "";
    byKey.set(key, (byKey.get(key) ?? 0) + 1);
    return run();
  };
  return { of: (key: string) => byKey.get(key) ?? 0, around: { call } };
}
