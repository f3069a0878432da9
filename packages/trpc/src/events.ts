/** What happened to a key; emitted for every outcome so logs and the dashboard can count them. */
export const IdempotencyEventType = {
  Claimed: "claimed",
  Replayed: "replayed",
  /** A duplicate found another request holding the key's lock and waited for it (`waitedMs`). */
  Waited: "waited",
  Conflict: "conflict",
  Mismatch: "mismatch",
  Takeover: "takeover",
  Completed: "completed",
  /** A recoverable handler's phase committed: `recoveryPoint` is its name. */
  PhaseCommitted: "phase_committed",
  /** A phase an earlier attempt committed was not run again (the takeover resumes after it). */
  PhaseSkipped: "phase_skipped",
  Released: "released",
  Expired: "expired",
  LeaseLost: "lease_lost",
  /** A completer took the key up (its client went away); the takeover that follows runs the work. */
  CompleterAttempt: "completer_attempt",
  /** The completer stopped trying: attempt limit, or a stored request that no longer parses. */
  CompleterGaveUp: "completer_gave_up",
} as const;
export type IdempotencyEventType = (typeof IdempotencyEventType)[keyof typeof IdempotencyEventType];

export type IdempotencyEvent = {
  type: IdempotencyEventType;
  tenantId: string;
  key: string;
  procedure: string;
  /** The claim generation the event belongs to. */
  fence?: number;
  /** The stored status for claimed-and-finished or replayed results. */
  status?: number;
  recoveryPoint?: string;
  /** For "expired": how many rows a cleanup batch deleted; a sink that counts replays (per key, written every few seconds) stores how many there were. */
  count?: number;
  /** For "waited": how long the attempt waited for the key, in milliseconds. */
  waitedMs?: number;
};
