/**
 * The result policy (README.md), the same for both flavours: a success and a
 * final error are stored and replayed; any other error stores nothing and
 * releases the key, so a retry runs the work again.
 */
import { KeyState } from "./states.js";
import type { FinalResponse } from "./store.js";
import type { HandlerResult, IdempotencyRuntime } from "./types.js";

/** The response to store, or undefined: release the key and let a retry run again. */
export function finalResponseOf(
  runtime: IdempotencyRuntime<unknown>,
  successStatus: number,
  result: HandlerResult,
): FinalResponse | undefined {
  if (result.ok) return { state: KeyState.Completed, status: successStatus, body: JSON.stringify(result.data) };
  const final = runtime.finalError(result.error);
  return final && { state: KeyState.Failed, ...final };
}
