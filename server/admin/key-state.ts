/**
 * How the dashboard names a key's state. "expired" and "stale" are never
 * stored: they follow from `expires_at` and `locked_until` compared with the
 * database clock (never the app's, so every reader agrees).
 */
import type { Fragment, ISql } from "postgres";
import { KeyState } from "../idempotency/schema";

export const DisplayState = {
  InProgress: KeyState.InProgress,
  Completed: KeyState.Completed,
  Failed: KeyState.Failed,
  Expired: "expired",
} as const;
export type DisplayState = (typeof DisplayState)[keyof typeof DisplayState];

export const DISPLAY_STATES = [DisplayState.InProgress, DisplayState.Completed, DisplayState.Failed, DisplayState.Expired] as const;
export const STORED_STATES = [KeyState.InProgress, KeyState.Completed, KeyState.Failed] as const;

/** Past its retention: treated as new by the middleware, deleted by the sweep. */
export const isExpired = (q: ISql, alias: string): Fragment => q`${q(alias)}.expires_at <= now()`;

/** In progress, not expired, and nobody holds a live lease: the next retry takes it over. */
export const isStale = (q: ISql, alias: string): Fragment =>
  q`(${q(alias)}.state = ${KeyState.InProgress} and ${q(alias)}.expires_at > now()
     and (${q(alias)}.locked_until is null or ${q(alias)}.locked_until <= now()))`;

/** ISO 8601 in UTC with microseconds: exact enough to use in a keyset cursor. */
export const iso = (q: ISql, column: Fragment): Fragment => q`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** Milliseconds from `a` to `b` as a float (extract gives numeric, which the driver would hand over as text). */
export const msBetween = (q: ISql, a: Fragment, b: Fragment): Fragment => q`(extract(epoch from ${b} - ${a}) * 1000)::float8`;
