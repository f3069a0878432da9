/** What a request does with a key row it did not create: the decision table of the README, in code. */
import { KeyState } from "./schema";
import type { ClaimInput, KeyRef, KeyRow } from "./store";
import type { IdempotencyEvent } from "./events";

/** PostgreSQL's lock_not_available: the wait budget for a key row ran out. */
export const LOCK_NOT_AVAILABLE = "55P03";

/** One request's hold on its key: what it would claim, and how it reports events. */
export type Attempt = { claim: ClaimInput; ref: KeyRef; event: (type: IdempotencyEvent["type"], extra?: Partial<IdempotencyEvent>) => void };

export type Decision = "replay" | "mismatch" | "wait" | "takeover" | "replace";

export function decide(row: KeyRow, hash: string): Decision {
  if (row.expired) return "replace";
  if (row.fingerprint !== hash) return "mismatch";
  if (row.state !== KeyState.InProgress) return "replay";
  return row.leaseExpired ? "takeover" : "wait";
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
