"use client";
/**
 * Keys per state at the top of the dashboard; each count also filters the
 * table. Across all tenants large counts are estimates from PostgreSQL's
 * statistics (marked ≈), small ones exact; for one tenant all are exact.
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../_trpc/client";
import { number } from "./format";
import { QueryError } from "./query-error";
import type { KeyFilters } from "./use-key-filters";

const REFRESH_MS = 5_000;

/** `partOf`: the tile counts keys another tile counts already (stale and needs attention are kinds of in progress). */
type Tile = {
  id: "in_progress" | "completed" | "failed" | "expired" | "stale" | "needs_attention";
  label: string;
  filter: Partial<KeyFilters>;
  partOf?: string;
};

const TILES: Tile[] = [
  { id: "in_progress", label: "In progress", filter: { state: "in_progress", staleOnly: false, expiredOnly: false } },
  { id: "stale", label: "Stale", filter: { state: undefined, staleOnly: true, expiredOnly: false }, partOf: "In progress" },
  {
    id: "needs_attention",
    label: "Needs attention",
    filter: { state: "needs_attention", staleOnly: false, expiredOnly: false },
    partOf: "In progress",
  },
  { id: "completed", label: "Completed", filter: { state: "completed", staleOnly: false, expiredOnly: false } },
  { id: "failed", label: "Failed", filter: { state: "failed", staleOnly: false, expiredOnly: false } },
  { id: "expired", label: "Expired", filter: { state: "expired", staleOnly: false, expiredOnly: false } },
];

function shown(count: { value: number; kind: "exact" | "estimate" | "at_least" }) {
  if (count.kind === "estimate") return `≈${number(count.value)}`;
  if (count.kind === "at_least") return `${number(count.value)}+`;
  return number(count.value);
}

export function StateCounts({ filters, update }: { filters: KeyFilters; update: (change: Partial<KeyFilters>) => void }) {
  const trpc = useTRPC();
  const counts = useQuery(
    trpc.admin.keys.counts.queryOptions({ tenantId: filters.tenantId }, { refetchInterval: REFRESH_MS, placeholderData: keepPreviousData }),
  );
  const active = (tile: Tile) =>
    tile.id === "stale" ? filters.staleOnly : !filters.staleOnly && !filters.expiredOnly && filters.state === tile.filter.state;
  return (
    <section aria-labelledby="counts-heading">
      <h2 id="counts-heading">Keys by state</h2>
      {counts.error && <QueryError error={counts.error} />}
      <ul className="counts">
        {TILES.map((tile) => (
          <li key={tile.id}>
            <button
              type="button"
              className={tile.partOf ? "count count-part" : "count"}
              aria-pressed={active(tile)}
              onClick={() => update(tile.filter)}
            >
              {tile.partOf && <span className="count-of">of {tile.partOf}:</span>}
              <span className="count-value" data-testid={`count-${tile.id}`}>
                {counts.data ? shown(counts.data[tile.id]) : "…"}
              </span>
              <span className="count-label">{tile.label}</span>
            </button>
          </li>
        ))}
      </ul>
      <p className="muted small" data-testid="counts-overlap">
        In progress, Completed, Failed and Expired add up to every key. Stale and Needs attention count in-progress keys again, so one key
        can be in all three: a key the completer gave up on needs attention and is usually stale too.
      </p>
      <p className="muted small">
        {filters.tenantId
          ? `Exact counts for tenant ${filters.tenantId}.`
          : "All tenants. ≈ marks an estimate from PostgreSQL's statistics; small states are counted exactly."}
      </p>
    </section>
  );
}
