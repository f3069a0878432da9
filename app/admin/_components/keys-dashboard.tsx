"use client";
/** The dashboard: the health strip, counts, the last hour's activity, the filters, the keys, the purge action and the audit log. */
import { ActivityChart } from "./activity-chart";
import { AuditLog } from "./audit-log";
import { HealthStrip } from "./health-strip";
import { KeyFilters } from "./key-filters";
import { KeysTable } from "./keys-table";
import { PurgeExpired } from "./purge-expired";
import { StateCounts } from "./state-counts";
import { useKeyFilters } from "./use-key-filters";

/**
 * `sweepMs`: how often this server deletes expired keys (0: never), so the purge card says what really happens.
 * `mayAct`: the operator may purge expired keys (a viewer is shown no such button).
 */
export function KeysDashboard({ sweepMs, mayAct }: { sweepMs: number; mayAct: boolean }) {
  const { filters, update, clear } = useKeyFilters();
  // A new set of filters starts a new walk through the pages.
  const walk = JSON.stringify({ ...filters, cursor: undefined });
  return (
    <>
      <HealthStrip />
      <div className="overview">
        <StateCounts filters={filters} update={update} />
        <ActivityChart tenantId={filters.tenantId} />
      </div>
      <KeyFilters filters={filters} update={update} clear={clear} />
      <KeysTable key={walk} filters={filters} update={update} />
      {mayAct && <PurgeExpired tenantId={filters.tenantId} sweepMs={sweepMs} />}
      <AuditLog tenantId={filters.tenantId} />
    </>
  );
}
