/** A key's state as a labelled badge, with the stale marker for an in-progress key past its lease. */
import { duration, STATE_LABELS, type StateName } from "./format";

export function StateBadge({ state, stale, staleForMs }: { state: StateName; stale: boolean; staleForMs: number | null }) {
  return (
    <span className="badges">
      <span className={`badge badge-${state}`}>{STATE_LABELS[state]}</span>
      {stale && (
        <span className="badge badge-stale" title="In progress past its lease: the holder stopped; the next retry takes the key over.">
          Stale {staleForMs !== null && `for ${duration(staleForMs)}`}
        </span>
      )}
    </span>
  );
}
