"use client";
/**
 * What retries ran into over the last hour, per minute, as stacked bars:
 * replays, conflicts, mismatches and takeovers. Plain SVG; the totals in the
 * legend carry the same information in text.
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../_trpc/client";
import { number } from "./format";
import { QueryError } from "./query-error";

const SERIES = [
  { id: "replayed", label: "Replays", color: "#0b5cad" },
  { id: "conflict", label: "Conflicts", color: "#9a6700" },
  { id: "mismatch", label: "Mismatches", color: "#b42318" },
  { id: "takeover", label: "Takeovers", color: "#6f42c1" },
] as const;

const WIDTH = 600;
const HEIGHT = 120;
const BAR = WIDTH / 60;

export function ActivityChart({ tenantId }: { tenantId?: string }) {
  const trpc = useTRPC();
  const activity = useQuery(
    trpc.admin.keys.activity.queryOptions({ tenantId }, { refetchInterval: 5_000, placeholderData: keepPreviousData }),
  );
  const minutes = activity.data ?? [];
  const totals = SERIES.map((s) => ({ ...s, total: minutes.reduce((n, m) => n + m[s.id], 0) }));
  const peak = Math.max(1, ...minutes.map((m) => SERIES.reduce((n, s) => n + m[s.id], 0)));
  const summary = totals.map((t) => `${t.label}: ${number(t.total)}`).join(", ");
  return (
    <section aria-labelledby="activity-heading">
      <h2 id="activity-heading">Last hour</h2>
      {activity.error && <QueryError error={activity.error} />}
      <ul className="legend">
        {totals.map((t) => (
          <li key={t.id}>
            <span className="swatch" style={{ background: t.color }} aria-hidden="true" />
            {t.label} <strong data-testid={`activity-${t.id}`}>{activity.data ? number(t.total) : "…"}</strong>
          </li>
        ))}
      </ul>
      <svg
        className="chart"
        viewBox={`0 0 ${WIDTH} ${HEIGHT + 16}`}
        role="img"
        aria-label={`Events per minute over the last hour. ${summary}.`}
      >
        <line x1={0} y1={HEIGHT} x2={WIDTH} y2={HEIGHT} stroke="#59636e" strokeWidth={1} />
        {minutes.map((m, i) => {
          let top = HEIGHT;
          return SERIES.map((s) => {
            const h = (m[s.id] / peak) * (HEIGHT - 4);
            if (h === 0) return null;
            top -= h;
            return (
              <rect key={`${m.minute}-${s.id}`} x={i * BAR + 1} y={top} width={BAR - 2} height={h} fill={s.color}>
                <title>{`${m.minute.slice(11, 16)} UTC: ${m[s.id]} ${s.label.toLowerCase()}`}</title>
              </rect>
            );
          });
        })}
        <text x={0} y={HEIGHT + 13} fontSize={11} fill="#59636e">
          60 min ago
        </text>
        <text x={WIDTH} y={HEIGHT + 13} fontSize={11} fill="#59636e" textAnchor="end">
          now
        </text>
      </svg>
    </section>
  );
}
