/** Every stored field of one key, with the derived state, lease and expiry spelled out. */
import type { ReactNode } from "react";
import type { KeyDetail } from "@/server/admin/get.handler";
import { CopyButton } from "./copy-button";
import { expiresIn, leaseLabel, pretty, utc } from "./format";
import { StateBadge } from "./state-badge";

export function KeyFields({ k }: { k: KeyDetail }) {
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
    ["Recovery data", k.recoveryData ? <pre key="rd">{pretty(k.recoveryData)}</pre> : "—"],
    ["Stored status", k.responseStatus === null ? "— (no result yet)" : String(k.responseStatus)],
    ["Created", utc(k.createdAt)],
    ["Updated", utc(k.updatedAt)],
    ["Completed", utc(k.completedAt)],
    ["Expires", `${utc(k.expiresAt)} (${expiresIn(k.expiresInMs)})`],
    ["Replays", String(k.replayCount)],
    ["Last replay", utc(k.lastReplayedAt)],
    ["Completed by", k.completedBy === "completer" ? "the completer (the client never came back)" : k.completedAt ? "the client's request" : "—"],
    ["Completer attempts", String(k.completerAttempts)],
    ["Completer's next attempt", k.storedState === "in_progress" && !k.completerGaveUpAt ? utc(k.completerNextAt ?? k.lockedUntil) : "—"],
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
