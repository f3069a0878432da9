/** Formatting shared by the admin components: durations, UTC times, counts, hashes. */

/** "45s", "2m 03s", "1h 05m", "3d 4h": the two largest units are enough to act on. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** "2026-11-29 20:11:03 UTC": the same on server and client, whatever the viewer's time zone. */
export function utc(iso: string | null): string {
  if (!iso) return "—";
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** "in 23h 59m" or "5s ago". */
export function expiresIn(ms: number): string {
  return ms > 0 ? `in ${duration(ms)}` : `${duration(-ms)} ago`;
}

export const shortHash = (hash: string) => hash.slice(0, 12);

export const number = (n: number) => n.toLocaleString("en-US");

export const STATE_LABELS = {
  in_progress: "In progress",
  completed: "Completed",
  failed: "Failed",
  expired: "Expired",
  needs_attention: "Needs attention",
} as const;
export type StateName = keyof typeof STATE_LABELS;

/** A key's lease in words: none once finished, how long it has been over, or until when it runs. */
export function leaseLabel(k: { storedState: string; stale: boolean; staleForMs: number | null; lockedUntil: string | null }): string {
  if (k.storedState !== "in_progress") return "—";
  return k.stale ? `over for ${duration(k.staleForMs ?? 0)}` : `until ${utc(k.lockedUntil)}`;
}

/** The URL of a key's page; keys may hold any visible ASCII, slashes and percent signs included. */
export const keyHref = (tenantId: string, key: string) => `/admin/keys/${encodeURIComponent(tenantId)}/${encodeURIComponent(key)}`;

/** Pretty JSON when the text is JSON, the text itself otherwise. */
export function pretty(text: string | null): string {
  if (text === null) return "—";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** What "Resume now" came to, in words (the button's result and its audit entry say the same). */
const RESUME_OUTCOMES: Record<string, string> = {
  completed: "Completed by the completer",
  not_ours: "Nothing to do: another attempt had the key",
  retry_later: "Not finished; the completer tries again later",
  needs_attention: "Not finished; the key still needs attention",
};

export function resumeOutcome(r: { outcome: string; status?: unknown; detail?: unknown }): string {
  const status = typeof r.status === "number" ? ` (status ${r.status})` : "";
  const why = typeof r.detail === "string" && r.detail ? `: ${r.detail}` : "";
  return `${RESUME_OUTCOMES[r.outcome] ?? r.outcome}${status}${why}.`;
}
