/** A key's timeline and what it caused: its events, the ledger entries tagged with it, the provider charges made under it. */
import type { CausedLedgerEntry, CausedPayment, TimelineEvent } from "@/server/admin/get.handler";
import { utc } from "./format";
import { TableScroll } from "./table-scroll";

const EVENT_LABELS: Record<string, string> = {
  claimed: "Claimed",
  replayed: "Replayed the stored result",
  waited: "A duplicate waited for the key's lock",
  conflict: "Duplicate while in progress (409)",
  mismatch: "Same key, different request (422)",
  takeover: "Taken over after the lease ran out",
  completed: "Completed; result stored",
  completed_by_completer: "Completed by the completer; result stored",
  released: "Released after an error; the next retry runs again",
  expired: "Expired; reused as a new operation",
  lease_lost: "A holder lost the key to a newer one",
  completer_attempt: "Completer attempt (the client did not come back)",
  completer_gave_up: "The completer gave up: needs attention",
};

/** Operator actions from the audit log, by action. */
const OPERATOR_LABELS: Record<string, string> = {
  recover: "Operator: recovered the lock (lease ended)",
  resume: "Operator: resumed now (ran the completer)",
};

/** "2026-11-29 20:11:03.042 UTC": events a few milliseconds apart stay apart. */
const utcMs = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 23)} UTC`;

/** What an operator's action came to, from its audit detail. */
function operatorDetail(detail: Record<string, unknown> | null): string {
  if (!detail) return "";
  if (typeof detail.outcome === "string")
    return ` · ${detail.outcome.replace("_", " ")}${typeof detail.status === "number" ? ` (${detail.status})` : ""}`;
  if (typeof detail.fence === "number") return ` · fence ${detail.fence}`;
  return "";
}

/** In time order, with milliseconds (the server sorts it; equal times keep their order). */
export function Timeline({ events }: { events: TimelineEvent[] }) {
  if (events.length === 0) return <p className="muted">No events recorded for this key.</p>;
  return (
    <ol className="timeline">
      {events.map((e) => (
        <li key={e.id} data-source={e.source}>
          <time dateTime={e.at}>{utcMs(e.at)}</time>{" "}
          <strong>{e.source === "operator" ? (OPERATOR_LABELS[e.type] ?? `Operator: ${e.type}`) : (EVENT_LABELS[e.type] ?? e.type)}</strong>
          <span className="muted small">
            {e.fence !== null && ` · fence ${e.fence}`}
            {e.status !== null && ` · status ${e.status}`}
            {e.recoveryPoint && ` · at ${e.recoveryPoint}`}
            {e.waitedMs !== null && ` · ${e.waitedMs} ms`}
            {e.count !== null && e.count > 1 && ` · ${e.count} times in this minute`}
            {e.source === "operator" && operatorDetail(e.detail)}
          </span>
          {e.traceId && (
            <span className="muted small">
              {" · trace "}
              <code className="mono" data-testid="trace-id">
                {e.traceId}
              </code>
            </span>
          )}
        </li>
      ))}
    </ol>
  );
}

/**
 * Debits and credits are read against each other down the columns, so on a phone the table keeps its
 * shape and scrolls in its box, the entry's id held in view. `labelledBy`: the id of its section's heading.
 */
export function LedgerEntries({ entries, labelledBy }: { entries: CausedLedgerEntry[]; labelledBy: string }) {
  if (entries.length === 0) return <p className="muted">No ledger entries carry this key.</p>;
  return (
    <TableScroll labelledBy={labelledBy}>
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Entry</th>
            <th scope="col">Account</th>
            <th scope="col">Direction</th>
            <th scope="col" className="num">
              Amount
            </th>
            <th scope="col">For</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr key={e.id}>
              <td className="mono">{e.id}</td>
              <td className="mono">{e.ledgerAccount}</td>
              <td>{e.direction}</td>
              <td className="num">
                {e.amount} {e.currency}
              </td>
              <td className="mono">{e.paymentId ?? e.orderId ?? e.accountId ?? "—"}</td>
              <td className="nowrap">{utc(e.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/** Few rows, each read whole (its standing is a sentence): on a phone a card per payment (globals.css, `.cards`). */
export function ProviderCharges({ payments }: { payments: CausedPayment[] }) {
  if (payments.length === 0) return <p className="muted">No payments were created with this key.</p>;
  return (
    <table className="table cards">
      <thead>
        <tr>
          <th scope="col">Payment</th>
          <th scope="col">Status</th>
          <th scope="col" className="num">
            Amount
          </th>
          <th scope="col">Destination</th>
          <th scope="col">Provider charge</th>
        </tr>
      </thead>
      <tbody>
        {payments.map((p) => (
          <tr key={p.id}>
            <td className="mono">{p.id}</td>
            <td data-testid="payment-standing" data-standing={p.standing.standing} data-label="Status">
              <strong>{p.standing.label}</strong>
              <span className="muted small block">{p.standing.detail}</span>
            </td>
            <td className="num" data-label="Amount">
              {p.amount} {p.currency}
            </td>
            <td className="mono" data-label="Destination">
              {p.destination}
            </td>
            <td className="mono" data-label="Provider charge">
              {p.pspChargeId ?? "—"}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
