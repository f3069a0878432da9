"use client";
/** The admin audit log: recovers, resumes and purges, in words, newest first, for everything or for one key. */
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../_trpc/client";
import { keyHref, resumeOutcome, utc } from "./format";
import { QueryError } from "./query-error";

const ACTION_LABELS: Record<string, string> = {
  recover: "Recovered the lock",
  resume: "Resumed now (ran the completer for the key)",
  purge_expired: "Purged expired keys",
};

function summarize(detail: Record<string, unknown>): string {
  if (typeof detail.outcome === "string") return resumeOutcome(detail as { outcome: string });
  if (typeof detail.deleted === "number") return `${detail.deleted} deleted${detail.remaining ? ", more remained" : ""}`;
  if (typeof detail.fence === "number") return `fence ${detail.fence}, lease was ${detail.wasStale ? "already over" : "still running"}`;
  return "";
}

export function AuditLog({ tenantId, keyName }: { tenantId?: string; keyName?: string }) {
  const trpc = useTRPC();
  const log = useQuery(trpc.admin.audit.list.queryOptions({ tenantId, key: keyName, limit: 20 }, { refetchInterval: 5_000 }));
  const entries = log.data ?? [];
  return (
    <section aria-labelledby="audit-heading">
      <h2 id="audit-heading">Audit log</h2>
      {log.error && <QueryError error={log.error} />}
      {entries.length === 0 ? (
        <p className="muted">{log.isPending ? "Loading…" : "No admin actions yet."}</p>
      ) : (
        // Each entry is read whole (who did what, when, with what result): on a phone a card per entry (globals.css, `.cards`).
        <table className="table audit-table cards">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Action</th>
              <th scope="col">On</th>
              <th scope="col">Result</th>
              <th scope="col">Operator</th>
              <th scope="col">Session</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.id}>
                <td className="nowrap">
                  <time dateTime={e.at}>{utc(e.at)}</time>
                </td>
                <td>{ACTION_LABELS[e.action] ?? e.action}</td>
                <td className="mono wrap" data-label="On">
                  {e.key && e.tenantId ? <a href={keyHref(e.tenantId, e.key)}>{e.key}</a> : (e.tenantId ?? "all tenants")}
                </td>
                <td data-label="Result">{summarize(e.detail)}</td>
                <td data-label="Operator">{e.operator ?? "—"}</td>
                <td className="mono small" data-label="Session">
                  {e.sessionId}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
