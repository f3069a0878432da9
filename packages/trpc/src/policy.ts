/**
 * The result policy (README.md), the same for both flavours: a success and a
 * final error are stored and replayed; any other error stores nothing and
 * releases the key, so a retry runs the work again.
 */
import { KeyState } from "./schema";
import type { Outcome } from "./store";
import type { HandlerResult, IdempotencyRuntime } from "./types";

/** The outcome to store, or undefined: release the key and let a retry run again. */
export function outcomeOf(runtime: IdempotencyRuntime<unknown>, successStatus: number, result: HandlerResult): Outcome | undefined {
  if (result.ok) return { state: KeyState.Completed, status: successStatus, body: JSON.stringify(result.data) };
  const final = runtime.finalError(result.error);
  return final && { state: KeyState.Failed, ...final };
}
