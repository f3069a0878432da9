/**
 * The rules every reader of the key table shares, written once as SQL
 * fragments: "expired" and "stale" are never stored, they follow from
 * `expires_at` and `locked_until` compared with the database clock (never the
 * app's, so every reader agrees). The store's statements, the admin's lists
 * and counts all use these.
 */
import type { Fragment, ISql } from "postgres";
import { KeyState } from "./states.js";

/** How the dashboard names a key: a stored state, or "expired" once past its retention. */
export const DisplayState = {
  InProgress: KeyState.InProgress,
  Completed: KeyState.Completed,
  Failed: KeyState.Failed,
  Expired: "expired",
  /** In progress underneath, but the completer gave up on it (`needsAttention`): an operator must look. */
  NeedsAttention: "needs_attention",
} as const;
export type DisplayState = (typeof DisplayState)[keyof typeof DisplayState];

export const DISPLAY_STATES = [
  DisplayState.InProgress,
  DisplayState.Completed,
  DisplayState.Failed,
  DisplayState.Expired,
  DisplayState.NeedsAttention,
] as const;
export const STORED_STATES = [KeyState.InProgress, KeyState.Completed, KeyState.Failed] as const;

/** Past its retention: treated as new by the middleware, deleted by the sweep. */
export const isExpired = (q: ISql, alias: string): Fragment => q`${q(alias)}.expires_at <= now()`;

/** Nobody holds a live lease on the key (never leased, released, or the holder stopped renewing). */
export const isLeaseOver = (q: ISql, alias: string): Fragment => q`(${q(alias)}.locked_until is null or ${q(alias)}.locked_until <= now())`;

/** In progress, not expired, and nobody holds a live lease: the next attempt takes it over. */
export const isStale = (q: ISql, alias: string): Fragment =>
  q`(${q(alias)}.state = ${KeyState.InProgress} and not ${isExpired(q, alias)} and ${isLeaseOver(q, alias)})`;

/** Milliseconds the holder's lease still runs (0 when it is over). */
export const leaseMsLeft = (q: ISql, alias: string): Fragment =>
  q`greatest(0, coalesce(extract(epoch from ${q(alias)}.locked_until - now()) * 1000, 0))::float8`;

/**
 * The key's generation as text: microseconds since the epoch of the claim
 * that started this operation (`created_at`, reset when an expired key is
 * reused). Unlike `created_at::text` it does not depend on the session's
 * TimeZone, so every connection derives the same downstream key from it.
 */
export const generation = (q: ISql, alias: string): Fragment => q`(extract(epoch from ${q(alias)}.created_at) * 1000000)::bigint::text`;

/**
 * The completer gave up on the key (its attempt limit, or a stored request
 * that no longer parses) and nobody has finished it since: an operator must
 * look. Shown as its own display state; it stays in progress underneath, so a
 * client retry or the admin's "Resume now" can still finish it.
 */
export const needsAttention = (q: ISql, alias: string): Fragment =>
  q`(${q(alias)}.state = ${KeyState.InProgress} and not ${isExpired(q, alias)} and ${q(alias)}.completer_gave_up_at is not null)`;

/** Stale, the completer has not given up on it, and its backoff (if any) has passed: a completer may take it up now. */
export const isDue = (q: ISql, alias: string): Fragment =>
  q`(${isStale(q, alias)} and ${q(alias)}.completer_gave_up_at is null and (${q(alias)}.completer_next_at is null or ${q(alias)}.completer_next_at <= now()))`;
