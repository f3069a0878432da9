/**
 * A key's state as a labelled badge, with the stale marker for an in-progress
 * key past its lease, and a mark on a key the completer finished (its client
 * had gone when it did).
 */
import { duration, STATE_LABELS, type StateName } from "./format";

type Props = { state: StateName; stale: boolean; staleForMs: number | null; completedBy?: string | null };

export function StateBadge({ state, stale, staleForMs, completedBy }: Props) {
  return (
    <span className="badges">
      <span className={`badge badge-${state}`}>{STATE_LABELS[state]}</span>
      {stale && (
        <span className="badge badge-stale" title="In progress past its lease: the holder stopped; the next retry takes the key over.">
          Stale {staleForMs !== null && `for ${duration(staleForMs)}`}
        </span>
      )}
      {completedBy === "completer" && (
        <span
          className="badge badge-completer"
          title="Its client had gone: the server's completer finished the work and stored this result (a client coming back later gets it replayed)."
        >
          by the completer
        </span>
      )}
    </span>
  );
}
