"use client";
/**
 * One keyset page of keys. "Next" follows the server's cursor; "Previous"
 * walks back through the cursors this view has seen (keyset pages have no
 * page numbers). Refetched every 5 seconds with the same filters and cursor.
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../../_trpc/client";
import { CopyButton } from "./copy-button";
import { expiresIn, keyHref, leaseLabel, number, shortHash, utc } from "./format";
import { QueryError } from "./query-error";
import { StateBadge } from "./state-badge";
import { listInput, type KeyFilters } from "./use-key-filters";

const COLUMNS = ["tenant", "key", "procedure", "state", "lease", "hash", "status", "created", "expires", "replays", "last-replay"] as const;

export function KeysTable({ filters, update }: { filters: KeyFilters; update: (change: Partial<KeyFilters>) => void }) {
  const trpc = useTRPC();
  const page = useQuery(
    trpc.admin.keys.list.queryOptions(listInput(filters), { refetchInterval: 5_000, placeholderData: keepPreviousData }),
  );
  // Cursors of the pages before this one; the first page's is "".
  const [previous, setPrevious] = useState<string[]>([]);
  const desc = filters.sort === "created_desc";

  const toPage = (cursor: string | undefined) => update({ cursor, sort: filters.sort });
  const next = () => {
    if (!page.data?.nextCursor) return;
    setPrevious([...previous, filters.cursor ?? ""]);
    toPage(page.data.nextCursor);
  };
  const back = () => {
    setPrevious(previous.slice(0, -1));
    toPage(previous.at(-1) || undefined);
  };
  const first = () => {
    setPrevious([]);
    toPage(undefined);
  };
  const items = page.data?.items ?? [];

  return (
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading">Keys</h2>
      {page.error && <QueryError error={page.error} />}
      <div className="table-scroll">
        <table className="table keys-table" aria-describedby="keys-status">
          {/* Fixed widths: the table is as wide as its card, whatever a key, a name or a badge asks for (globals.css). */}
          <colgroup>
            {COLUMNS.map((c) => (
              <col key={c} className={`col-${c}`} />
            ))}
          </colgroup>
          <thead>
            <tr>
              <th scope="col">Tenant</th>
              <th scope="col">Key</th>
              <th scope="col">Procedure</th>
              <th scope="col">State</th>
              <th scope="col">Lease</th>
              <th scope="col">Request hash</th>
              <th scope="col" className="num">
                Status
              </th>
              <th scope="col" aria-sort={desc ? "descending" : "ascending"}>
                <button type="button" className="link-button" onClick={() => update({ sort: desc ? "created_asc" : "created_desc" })}>
                  Created <span aria-hidden="true">{desc ? "↓" : "↑"}</span>
                  <span className="visually-hidden">
                    {desc ? ", newest first; show oldest first" : ", oldest first; show newest first"}
                  </span>
                </button>
              </th>
              <th scope="col">Expires</th>
              <th scope="col" className="num">
                Replays
              </th>
              <th scope="col">Last replay</th>
            </tr>
          </thead>
          <tbody>
            {items.map((k) => (
              <tr key={`${k.tenantId}\n${k.key}`}>
                <td className="tenant-cell">
                  <button
                    type="button"
                    className="link-button"
                    title={`${k.tenantName ?? k.tenantId}: show only this tenant's keys`}
                    onClick={() => update({ tenantId: k.tenantId })}
                  >
                    {k.tenantName ?? k.tenantId}
                  </button>
                  <div className="muted small mono tenant-id" title={k.tenantId}>
                    {k.tenantId}
                  </div>
                </td>
                <td className="mono key-cell">
                  <a href={keyHref(k.tenantId, k.key)} title={k.key}>
                    {k.key}
                  </a>
                </td>
                <td className="mono procedure" title={k.procedure}>
                  {k.procedure}
                </td>
                <td>
                  <StateBadge state={k.state} stale={k.stale} staleForMs={k.staleForMs} completedBy={k.completedBy} />
                </td>
                <td>{leaseLabel(k)}</td>
                <td className="hash">
                  <code title={k.fingerprint}>{shortHash(k.fingerprint)}</code>{" "}
                  <CopyButton value={k.fingerprint} label={`Copy the request hash of ${k.key}`} />
                </td>
                <td className="num">{k.responseStatus ?? "—"}</td>
                <td className="when">
                  <time dateTime={k.createdAt}>{utc(k.createdAt)}</time>
                </td>
                <td>{expiresIn(k.expiresInMs)}</td>
                <td className="num">{number(k.replayCount)}</td>
                <td className="when">{k.lastReplayedAt ? <time dateTime={k.lastReplayedAt}>{utc(k.lastReplayedAt)}</time> : "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div className="pager">
        <p id="keys-status" className="muted small">
          {page.isPending
            ? "Loading keys…"
            : items.length === 0
              ? "No keys match these filters."
              : `Showing ${number(items.length)} ${items.length === 1 ? "key" : "keys"}${page.data?.nextCursor ? "; more on the next page" : ""}.`}
        </p>
        <div className="pager-buttons">
          <button type="button" className="secondary" onClick={first} disabled={!filters.cursor}>
            First page
          </button>
          <button type="button" className="secondary" onClick={back} disabled={!filters.cursor}>
            Previous page
          </button>
          <button type="button" className="secondary" onClick={next} disabled={!page.data?.nextCursor}>
            Next page
          </button>
        </div>
      </div>
    </section>
  );
}
