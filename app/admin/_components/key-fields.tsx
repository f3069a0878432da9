/** Every stored field of one key, with the derived state, lease and expiry spelled out. */
import type { ReactNode } from "react";
import type { KeyDetail } from "@/server/admin/get.handler";
import { CopyButton } from "./copy-button";
import { expiresIn, leaseLabel, pretty, utc } from "./format";
import { StateBadge } from "./state-badge";

/** Who finished the key, true to its history: a client that came back after the completer got the result replayed. */
function completedBy(k: KeyDetail): string {
  if (k.completedBy === "completer")
    return k.replayCount > 0
      ? "the completer (its client had gone; it came back later and got this result replayed)"
      : "the completer (its client has not come back)";
  return k.completedAt ? "the client's request" : "—";
}

/** When the completer will try the key next, true to this server's settings. */
function nextAttempt(k: KeyDetail, completerOn: boolean): string {
  if (k.storedState !== "in_progress" || k.completerGaveUpAt) return "—";
  if (!completerOn) return "none: the completer is off on this server (COMPLETER_INTERVAL_MS=0); a client retry or Resume now finishes it";
  return utc(k.completerNextAt ?? k.lockedUntil);
}

export function KeyFields({ k, completerOn }: { k: KeyDetail; completerOn: boolean }) {
  const rows: [string, ReactNode][] = [
    ["Tenant", `${k.tenantName ?? "(unknown)"} · ${k.tenantId}`],
    ["Procedure", <code key="p">{k.procedure}</code>],
    ["State", <StateBadge key="s" state={k.state} stale={k.stale} staleForMs={k.staleForMs} completedBy={k.completedBy} />],
    ["Stored state", <code key="st">{k.storedState}</code>],
    [
      "Request hash (SHA-256)",
      <span key="h" className="hash">
        <code data-testid="request-hash">{k.fingerprint}</code> <CopyButton value={k.fingerprint} label="Copy the request hash" />
      </span>,
    ],
    ["Lease", leaseLabel(k)],
    ["Fence (claim generation)", String(k.fence)],
    ["Recovery point", <code key="rp">{k.recoveryPoint}</code>],
    [
      "Recovery data",
      k.recoveryData ? (
        <pre key="rd" tabIndex={0}>
          {pretty(k.recoveryData)}
        </pre>
      ) : (
        "—"
      ),
    ],
    ["Stored status", k.responseStatus === null ? "— (no result yet)" : String(k.responseStatus)],
    ["Created", utc(k.createdAt)],
    ["Updated", utc(k.updatedAt)],
    ["Completed", utc(k.completedAt)],
    ["Expires", `${utc(k.expiresAt)} (${expiresIn(k.expiresInMs)})`],
    ["Replays", String(k.replayCount)],
    ["Last replay", utc(k.lastReplayedAt)],
    ["Completed by", completedBy(k)],
    ["Completer attempts", String(k.completerAttempts)],
    ["Completer's next attempt", nextAttempt(k, completerOn)],
    ["Completer's last error", k.completerError ?? "—"],
  ];
  return (
    <dl className="fields">
      {rows.map(([label, value]) => (
        <div key={label} className="field-row">
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
