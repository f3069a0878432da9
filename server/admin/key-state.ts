/**
 * The dashboard's view of key states. The rules themselves ("expired",
 * "stale", the display states) live in the idempotency middleware and are
 * re-exported here for the admin handlers; this file adds only how the
 * dashboard formats times.
 */
import type { Fragment, ISql } from "postgres";

export {
  DISPLAY_STATES,
  DisplayState,
  downstreamKeyOf,
  generation,
  isExpired,
  isStale,
  needsAttention,
  STORED_STATES,
} from "@exactly-once/trpc";

/** ISO 8601 in UTC with microseconds: exact enough to use in a keyset cursor. */
export const iso = (q: ISql, column: Fragment): Fragment => q`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** Milliseconds from `a` to `b` as a float (extract gives numeric, which the driver would hand over as text). */
export const msBetween = (q: ISql, a: Fragment, b: Fragment): Fragment => q`(extract(epoch from ${b} - ${a}) * 1000)::float8`;
