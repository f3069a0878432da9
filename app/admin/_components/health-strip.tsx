"use client";
/**
 * The health strip: the numbers Prometheus scrapes from this instance
 * (`/api/metrics`), as rates over the last five minutes, and the key gauges
 * the alerts watch. A tile turns to a warning when the alert of the same
 * name would be looking at it (ops/prometheus/alerts.yml).
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../_trpc/client";
import { number } from "./format";
import { QueryError } from "./query-error";

const REFRESH_MS = 5_000;

/** "0.25/s", "12/s", "0/s": rates read at a glance. */
const perSecond = (n: number) => `${n === 0 ? "0" : n < 10 ? n.toFixed(2) : n.toFixed(0)}/s`;

export function HealthStrip() {
  const trpc = useTRPC();
  const health = useQuery(trpc.admin.health.queryOptions(undefined, { refetchInterval: REFRESH_MS, placeholderData: keepPreviousData }));
  const h = health.data;
  const tiles = h
    ? [
        { id: "requests", label: "Idempotent requests", value: perSecond(h.rates.requests), warn: false },
        { id: "replayed", label: "Replayed", value: perSecond(h.rates.replayed), warn: false },
        { id: "conflicts", label: "Conflicts (409)", value: perSecond(h.rates.conflicts), warn: h.rates.conflicts > 0.1 },
        { id: "mismatches", label: "Mismatches (422)", value: perSecond(h.rates.mismatches), warn: h.rates.mismatches > 0.1 },
        { id: "failed", label: "Failed", value: perSecond(h.rates.failed), warn: h.rates.failed > 0 },
        { id: "completer", label: "Completer failures", value: perSecond(h.rates.completerFailures), warn: h.rates.completerFailures > 0 },
        {
          id: "provider",
          label: "Provider failures",
          value: perSecond(h.rates.providerFailures),
          warn: h.rates.providerFailures > 0.2 * h.rates.providerCalls && h.rates.providerFailures > 0,
        },
        { id: "stale", label: "Stale keys", value: number(h.keys.stale), warn: h.keys.stale > 0 },
        { id: "attention", label: "Need attention", value: number(h.keys.needsAttention), warn: h.keys.needsAttention > 0 },
        { id: "database", label: "Database", value: h.databaseUp ? "up" : "down", warn: !h.databaseUp },
      ]
    : [];
  return (
    <section aria-labelledby="health-heading" className="health">
      <h2 id="health-heading">
        Health{" "}
        <span className="muted">
          this instance, {h && h.windowSeconds < 300 ? `the last ${h.windowSeconds} s` : "the last 5 minutes"}, as /api/metrics counts it
        </span>
      </h2>
      {health.error && <QueryError error={health.error} />}
      <ul className="health-tiles">
        {tiles.map((tile) => (
          <li key={tile.id} className={tile.warn ? "health-tile warn" : "health-tile"} data-testid={`health-${tile.id}`}>
            <span className="health-value">{tile.value}</span>
            <span className="health-label">{tile.label}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}
