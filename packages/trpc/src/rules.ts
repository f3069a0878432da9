/**
 * The rules every reader of the key table shares, written once as SQL:
 * "expired" and "stale" are never stored, they follow from `expires_at` and
 * `locked_until` compared with the database clock (never the app's, so every
 * reader agrees). Each rule is SQL text on a key row's alias (`expired`, …),
 * which the store splices into its statements once (statement.ts), and a
 * postgres-js fragment of that text (`isExpired`, …) for every other query:
 * the admin's lists and counts, the completer's claim, the sweep.
 */
import type { Fragment, ISql } from "postgres";
import { KeyState } from "./states.js";
import { identifier as alias, SqlText, sqlText, templateOf } from "./statement.js";

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

/** A state as an SQL literal: the states are the package's own words, never a client's. */
const state = (value: KeyState) => new SqlText(`'${value}'`);

/** Past its retention: treated as new by the middleware, deleted by the sweep. */
export const expired = (k: string) => sqlText`${alias(k)}.expires_at <= now()`;

/** Nobody holds a live lease on the key (never leased, released, or the holder stopped renewing). */
export const leaseOver = (k: string) => sqlText`(${alias(k)}.locked_until is null or ${alias(k)}.locked_until <= now())`;

/** In progress, not expired, and nobody holds a live lease: the next attempt takes it over. */
const stale = (k: string) => sqlText`(${alias(k)}.state = ${state(KeyState.InProgress)} and not ${expired(k)} and ${leaseOver(k)})`;

/** Milliseconds the holder's lease still runs (0 when it is over). */
export const msLeft = (k: string) => sqlText`greatest(0, coalesce(extract(epoch from ${alias(k)}.locked_until - now()) * 1000, 0))::float8`;

/**
 * The key's generation as text: microseconds since the epoch of the claim
 * that started this operation (`created_at`, reset when an expired key is
 * reused). Unlike `created_at::text` it does not depend on the session's
 * TimeZone, so every connection derives the same downstream key from it.
 */
export const generationOf = (k: string) => sqlText`(extract(epoch from ${alias(k)}.created_at) * 1000000)::bigint::text`;

/**
 * The completer gave up on the key (its attempt limit, or a stored request
 * that no longer parses) and nobody has finished it since: an operator must
 * look. Shown as its own display state; it stays in progress underneath, so a
 * client retry or the admin's "Resume now" can still finish it.
 */
const attention = (k: string) =>
  sqlText`(${alias(k)}.state = ${state(KeyState.InProgress)} and not ${expired(k)} and ${alias(k)}.completer_gave_up_at is not null)`;

/** Stale, the completer has not given up on it, and its backoff (if any) has passed: a completer may take it up now. */
const due = (k: string) =>
  sqlText`(${stale(k)} and ${alias(k)}.completer_gave_up_at is null and (${alias(k)}.completer_next_at is null or ${alias(k)}.completer_next_at <= now()))`;

/** A rule as a fragment for a postgres-js query. */
const fragment = (q: ISql, rule: SqlText): Fragment => q(templateOf([rule.text]));

export const isExpired = (q: ISql, k: string): Fragment => fragment(q, expired(k));
export const isLeaseOver = (q: ISql, k: string): Fragment => fragment(q, leaseOver(k));
export const isStale = (q: ISql, k: string): Fragment => fragment(q, stale(k));
export const generation = (q: ISql, k: string): Fragment => fragment(q, generationOf(k));
export const needsAttention = (q: ISql, k: string): Fragment => fragment(q, attention(k));
export const isDue = (q: ISql, k: string): Fragment => fragment(q, due(k));
