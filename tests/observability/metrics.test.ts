/**
 * `/api/metrics` counts what really happened: a payment, a duplicate that
 * arrives while it runs (409), its replay, a mismatch, a payment its client
 * abandoned and the completer run that finishes it — each once, under the
 * right labels, read from the Prometheus text a scraper gets. Requests go
 * through the REST route module (the HTTP edge included), against the real
 * database and provider stand-in.
 */
import { describe, expect, it } from "vitest";
import { POST as restPost } from "../../app/api/[...rest]/route";
import { database } from "../../db/client";
import { app, type App } from "../../server/app";
import { appWith } from "../support/app";
import { newKey, newTenant, type Tenant } from "../support/api";
import { abandonedPayment, keyRow, PAYMENT, sleep } from "../payments/support";

type Labels = Record<string, string>;

/** Every sample of the exposition, by metric name, with its labels. */
function samples(text: string): { name: string; labels: Labels; value: number }[] {
  return text
    .split("\n")
    .filter((line) => line && !line.startsWith("#"))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not an exposition line: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]));
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

/** The sum of a metric's samples whose labels include `labels`. */
function value(text: string, name: string, labels: Labels = {}): number {
  return samples(text)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

async function scrapeAs(headers: Record<string, string>, via: App = app) {
  const res = await via.metrics(new Request("http://test/api/metrics", { headers }));
  return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
}

const LOOPBACK = { "x-forwarded-for": "127.0.0.1" };

async function pay(tenant: Tenant, key: string, body: Record<string, unknown> = {}) {
  const res = await restPost(
    new Request("http://test/api/v1/payments", {
      method: "POST",
      headers: { authorization: `Bearer ${tenant.token}`, "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify({ ...PAYMENT, ...body }),
    }),
  );
  return { status: res.status, replayed: res.headers.get("idempotent-replayed"), text: await res.text() };
}

describe("/api/metrics", () => {
  it("counts a payment, a conflict, a replay, a mismatch, a failure and the completer's takeover once each", async () => {
    const before = (await scrapeAs(LOOPBACK)).text;
    const tenant = await newTenant("metrics");
    const key = newKey("metrics");
    const slow = { destination: "acct_test_slow" };

    // The duplicate waits a fifth of a second for the holder (1.5 s at the slow provider), then gets its 409.
    const waitMs = app.idempotencyRuntime.defaults.waitMs;
    app.idempotencyRuntime.defaults.waitMs = 200;
    let first: ReturnType<typeof pay>;
    try {
      first = pay(tenant, key, slow);
      for (let tries = 0; (await keyRow(tenant.id, key))?.state !== "in_progress"; tries++) {
        expect(tries, "the first payment never claimed its key").toBeLessThan(200);
        await sleep(10);
      }
      const duplicate = await pay(tenant, key, slow);
      expect(duplicate.status, duplicate.text).toBe(409);
    } finally {
      app.idempotencyRuntime.defaults.waitMs = waitMs;
    }
    const executed = await first;
    expect(executed.status, executed.text).toBe(201);
    const replay = await pay(tenant, key, slow);
    expect([replay.status, replay.replayed]).toEqual([201, "true"]);
    const mismatch = await pay(tenant, key, { ...slow, amount: "26.00" });
    expect(mismatch.status, mismatch.text).toBe(422);

    const abandoned = newKey("metrics-abandoned");
    await abandonedPayment(tenant, abandoned, PAYMENT);
    const rounds = await app.completer.completeDueKeys({ tenantId: tenant.id, backoffMs: 20, maxBackoffMs: 100 });
    expect(rounds.map((r) => [r.key, r.outcome])).toEqual([[abandoned, "completed"]]);

    const after = await scrapeAs(LOOPBACK);
    expect(after.status).toBe(200);
    expect(after.type).toContain("text/plain");
    const delta = (name: string, labels: Labels = {}) => value(after.text, name, labels) - value(before, name, labels);
    const procedure = "payments.create";
    const outcomes = ["executed", "replayed", "mismatch", "conflict", "waited", "takeover", "lease_lost", "failed"];
    expect(Object.fromEntries(outcomes.map((outcome) => [outcome, delta("idempotency_requests_total", { procedure, outcome })]))).toEqual({
      executed: 1,
      replayed: 1,
      mismatch: 1,
      conflict: 1,
      waited: 0,
      // The completer's run: it takes the abandoned key over and completes it.
      takeover: 1,
      lease_lost: 0,
      // The abandoned payment's own request: a 503 with the provider unreachable, its key released.
      failed: 1,
    });
    expect(delta("idempotency_request_duration_seconds_count", { procedure, outcome: "executed" })).toBe(1);
    // The holder waited 1.5 s at the slow provider.
    expect(delta("idempotency_request_duration_seconds_bucket", { procedure, outcome: "executed", le: "1" })).toBe(0);
    expect(delta("idempotency_completer_runs_total", { result: "completed" })).toBe(1);
    expect(delta("idempotency_completer_runs_total")).toBe(1);
    // Two charges answered (the slow one and the completer's); the abandoned attempts found nobody (status 0).
    expect(delta("psp_requests_total", { operation: "charge", status: "201" })).toBe(2);
    expect(delta("psp_requests_total", { operation: "charge", status: "0" })).toBeGreaterThanOrEqual(1);
    // Five requests through the REST route (the abandoned one went through handleRest directly): 201, 409, 201, 422.
    const http = (status: string) =>
      delta("http_server_request_duration_seconds_count", {
        http_request_method: "POST",
        http_route: "/api/[...rest]",
        http_response_status_code: status,
      });
    expect([http("201"), http("409"), http("422")]).toEqual([2, 1, 1]);

    // No label carries a key or a tenant.
    for (const text of [tenant.id, key, abandoned]) expect(after.text).not.toContain(text);
    expect(value(after.text, "process_cpu_seconds_total")).toBeGreaterThan(0);
    expect(
      samples(after.text)
        .filter((s) => s.name === "idempotency_keys")
        .map((s) => s.labels.state)
        .sort(),
    ).toEqual(["in_progress", "needs_attention", "stale"]);
  });

  it("counts each call of a batch (one context, one list of outcomes) under its own outcome", async () => {
    const tenant = await newTenant("metrics-batch");
    const ctx = await app.createContextInner({ tenant, headers: new Headers({ "Idempotency-Key": newKey("metrics-batch") }) });
    const caller = app.createCaller(ctx);
    const before = (await scrapeAs(LOOPBACK)).text;
    // The same key for two inputs: whichever claims it first runs, the other is refused as a mismatch.
    const answers = await Promise.allSettled([caller.payments.create(PAYMENT), caller.payments.create({ ...PAYMENT, amount: "26.00" })]);
    expect(answers.map((a) => a.status).sort()).toEqual(["fulfilled", "rejected"]);
    const after = (await scrapeAs(LOOPBACK)).text;
    const delta = (outcome: string) =>
      value(after, "idempotency_requests_total", { procedure: "payments.create", outcome }) -
      value(before, "idempotency_requests_total", { procedure: "payments.create", outcome });
    expect([delta("executed"), delta("mismatch"), delta("failed")]).toEqual([1, 1, 0]);
    // Both decisions reach the request's own list, for the answer's headers.
    expect(ctx.outcomes.map((o) => o.decision).sort()).toEqual(["executed", "refused"]);
  });

  it("exports every outcome of every idempotent procedure from the start, so a rate sees the first request", async () => {
    const text = (await scrapeAs(LOOPBACK)).text;
    const outcomes = ["conflict", "executed", "failed", "lease_lost", "mismatch", "replayed", "takeover", "waited"];
    for (const procedure of ["payments.create", "orders.create", "payments.refund"]) {
      const series = samples(text).filter((s) => s.name === "idempotency_requests_total" && s.labels.procedure === procedure);
      expect(series.map((s) => s.labels.outcome).sort(), procedure).toEqual(outcomes);
      const counted = samples(text).filter(
        (s) => s.name === "idempotency_request_duration_seconds_count" && s.labels.procedure === procedure,
      );
      expect(counted.map((s) => s.labels.outcome).sort(), procedure).toEqual(outcomes);
    }
    // Only idempotent procedures: a read has no idempotency outcome.
    expect(samples(text).some((s) => s.name === "idempotency_requests_total" && s.labels.procedure === "catalog.list")).toBe(false);
  });

  it("counts the pool's connections that reservations and open transactions hold, and lets them go", async () => {
    const app = database();
    const pool = { db_client_connection_pool_name: "app" };
    const used = async () =>
      value((await scrapeAs(LOOPBACK)).text, "db_client_connection_count", { ...pool, db_client_connection_state: "used" });
    const before = await used();
    const reserved = await Promise.all([app.reserve(), app.reserve()]);
    let commit!: () => void;
    let begun!: () => void;
    const inTransaction = new Promise<void>((resolve) => (begun = resolve));
    const transaction = app.begin(async (tx) => {
      await tx`select 1`;
      begun();
      await new Promise<void>((resolve) => (commit = resolve));
    });
    await inTransaction;
    try {
      expect(await used()).toBe(before + 3);
    } finally {
      commit();
      await transaction;
      for (const r of reserved) r.release();
    }
    expect(await used()).toBe(before);
    expect(value((await scrapeAs(LOOPBACK)).text, "db_client_connection_max", pool)).toBe(app.sql.options.max);
  });

  it("answers loopback or METRICS_TOKEN, and 404 to anyone else", async () => {
    const token = "metrics-token-for-tests-0123456789";
    const withToken = appWith({ METRICS_TOKEN: token });
    expect((await scrapeAs({ "x-forwarded-for": "203.0.113.7" }, withToken)).status).toBe(404);
    expect(
      (await scrapeAs({ "x-forwarded-for": "203.0.113.7", authorization: "Bearer wrong-token-of-any-length" }, withToken)).status,
    ).toBe(404);
    const refused = await scrapeAs({}, withToken);
    expect([refused.status, refused.type]).toEqual([404, "application/problem+json"]);
    expect((await scrapeAs({ "x-forwarded-for": "203.0.113.7", authorization: `Bearer ${token}` }, withToken)).status).toBe(200);
    expect((await scrapeAs({ "x-forwarded-for": "::1" }, withToken)).status).toBe(200);
    expect((await scrapeAs({ "x-forwarded-for": "203.0.113.7", authorization: `Bearer ${token}` })).status).toBe(404);
  });
});
