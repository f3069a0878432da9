/**
 * Every Prometheus metric the app exports, defined once, in one registry
 * kept on `globalThis`: Next.js may load this module in more than one
 * bundle (route handlers, instrumentation), and a second registry would
 * count half the requests and answer half the scrapes.
 *
 * No label ever carries a key, a tenant id or anything a client chooses:
 * procedures, routes and provider operations are names the app defines, the
 * outcomes and results are closed sets below, statuses are numbers.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** Why the HTTP edge refused a request before any route saw it. */
export const EdgeRefusal = {
  /** A percent-escape in the path that does not decode. */
  MalformedPath: "malformed_path",
  /** TRACE, TRACK or a method Node.js's parser does not know. */
  Method: "method",
  /** More than one Idempotency-Key field. */
  KeyFields: "idempotency_key_fields",
} as const;
export type EdgeRefusal = (typeof EdgeRefusal)[keyof typeof EdgeRefusal];

/** How an idempotent request ended: the `outcome` label it is counted under, one per request. */
export const OutcomeLabel = {
  Executed: "executed",
  Replayed: "replayed",
  Mismatch: "mismatch",
  Conflict: "conflict",
  /** A duplicate that waited for the holder and then got its stored result. */
  Waited: "waited",
  Takeover: "takeover",
  LeaseLost: "lease_lost",
  Failed: "failed",
} as const;
export type OutcomeLabel = (typeof OutcomeLabel)[keyof typeof OutcomeLabel];

// Request latencies run from a replay (a millisecond) to a slow provider plus a wait (tens of seconds).
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

function create() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Counter({ name, help, labelNames, registers });
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Gauge({ name, help, labelNames, registers });
  const latency = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Histogram({ name, help, labelNames, buckets: LATENCY_BUCKETS, registers });
  return {
    registry,
    requests: counter("idempotency_requests_total", "Idempotent requests by procedure and how they ended.", ["procedure", "outcome"]),
    requestDuration: latency(
      "idempotency_request_duration_seconds",
      "Time from an idempotent procedure's start to its answer, by procedure and outcome.",
      ["procedure", "outcome"],
    ),
    keys: gauge(
      "idempotency_keys",
      "Keys in progress, stale (lease over, nobody working on them) and needing attention (the completer gave up); refreshed every few seconds.",
      ["state"],
    ),
    completerRuns: counter("idempotency_completer_runs_total", "Keys the completer took up, by what came of them.", ["result"]),
    expiredDeleted: counter("idempotency_expired_keys_deleted_total", "Expired keys deleted by the expiry sweep."),
    pspRequests: counter("psp_requests_total", "Attempts at the payment provider by operation and HTTP status (0: no answer).", [
      "operation",
      "status",
    ]),
    pspDuration: latency("psp_request_duration_seconds", "Duration of one attempt at the payment provider.", ["operation", "status"]),
    httpDuration: latency(
      "http_server_request_duration_seconds",
      "Duration of HTTP server requests (OpenTelemetry semantic conventions).",
      ["http_request_method", "http_route", "http_response_status_code"],
    ),
    edgeRefused: counter("http_server_refused_requests_total", "Requests the HTTP edge answered itself, before any route, by reason.", [
      "reason",
    ]),
    dbUp: gauge("db_up", "1 while the database answers, 0 while it is away or the server still waits for it."),
    // OpenTelemetry's database-client conventions (db.client.connection.*), named as Prometheus receives them.
    dbPoolMax: gauge("db_client_connection_max", "The most connections the database pool opens.", ["db_client_connection_pool_name"]),
    dbPoolConnections: gauge(
      "db_client_connection_count",
      'Connections of the database pool by state. Only state="used" is exported: the connections a reservation or an open transaction holds, counted exactly. ' +
        "A single statement also occupies a connection while it runs, but postgres-js pipelines those onto shared connections and reports neither that nor how many connections are open or idle, so neither is counted.",
      ["db_client_connection_pool_name", "db_client_connection_state"],
    ),
  };
}

type Metrics = ReturnType<typeof create>;

const holder = globalThis as { __eoMetrics?: Metrics };

export const metrics = (): Metrics => (holder.__eoMetrics ??= create());
