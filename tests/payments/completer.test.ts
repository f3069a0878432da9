/**
 * The completer finishes payments whose client never came back: the app
 * killed with SIGKILL after the provider charged (or before it could), a
 * decline, a provider down for several rounds, races with another instance
 * and a client retry, a holder that is alive and renewing, and a stored
 * request that no longer parses. Every test counts what happened at the
 * provider, in the payments and in the ledger, not just statuses.
 *
 * Each round is scoped to the test's tenant: test files share one database,
 * and others leave stale keys on purpose for their own retries to take over.
 */
import { execFile } from "node:child_process";
import net from "node:net";
import { promisify } from "node:util";
import { describe, expect, inject, it, onTestFinished } from "vitest";
import { database } from "../../db/client";
import { app, type App } from "../../server/app";
import { type KeyCompletion, type RunOptions } from "../../server/keys/completer";
import { reconcile } from "../../server/reconcile/reconcile";
import { api, barrier, ledgerFor, newKey, newTenant, unbalancedTransactions, type Tenant } from "../support/api";
import {
  abandonedPayment,
  chargesFor,
  expectCaptureMovement,
  killOnceCharged,
  pay,
  payChild,
  paymentsForKey,
  providerCharges,
  sleep,
  withProviderDown,
} from "./support";

type CompleterRow = {
  state: string;
  fence: string;
  response_status: number | null;
  response_body: string | null;
  completer_attempts: number;
  completer_error: string | null;
  completed_by: string | null;
  needs_attention: boolean;
};

async function completerRow(tenantId: string, key: string): Promise<CompleterRow> {
  const { sql } = database();
  const { needsAttention } = await import("@exactly-once/trpc");
  const [row] = await sql<CompleterRow[]>`
    select state, fence::text, response_status, response_body, completer_attempts, completer_error, completed_by,
           ${needsAttention(sql, "k")} as needs_attention
    from idempotency_keys k where tenant_id = ${tenantId} and key = ${key}`;
  return row!;
}

const run = promisify(execFile);

/** Short backoff: the tests play many completer intervals in a few seconds. */
const FAST = { backoffMs: 20, maxBackoffMs: 100 } satisfies RunOptions;

/** Runs completer rounds for the tenant until the key is no longer in progress (or needs attention). */
async function completeUntilSettled(
  tenantId: string,
  key: string,
  options: RunOptions = {},
  { completer }: App = app,
): Promise<KeyCompletion[]> {
  const seen: KeyCompletion[] = [];
  const deadline = Date.now() + 30_000;
  for (;;) {
    seen.push(...(await completer.completeDueKeys({ ...FAST, ...options, tenantId })));
    const row = await completerRow(tenantId, key);
    if (row.state !== "in_progress" || row.needs_attention) return seen;
    expect(Date.now(), `the completer never finished ${key}: ${JSON.stringify(seen)}`).toBeLessThan(deadline);
    await sleep(50);
  }
}

/** A provider that accepts connections and never answers: the app's call hangs until it is killed. */
async function blackHole() {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => sockets.add(socket));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  onTestFinished(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

/** The holder killed while its provider call hangs (the payment row committed, nothing sent yet). */
async function killedBeforeTheCharge(tenant: Tenant, key: string, body: { amount: string; destination: string }) {
  const holder = payChild(tenant, key, body.amount, body.destination, { PSP_URL: await blackHole() });
  await holder.killWhen(async () => (await paymentsForKey(tenant.id, key))[0]?.status === "pending");
}

async function expectReplayOf(tenant: Tenant, key: string, body: Record<string, unknown>, status: number) {
  const stored = await completerRow(tenant.id, key);
  const retry = await pay(tenant, key, body);
  expect(retry.status).toBe(status);
  expect(retry.headers.get("idempotent-replayed")).toBe("true");
  expect(retry.text).toBe(stored.response_body);
}

describe("the completer finishes payments whose client never came back", () => {
  it("SIGKILL after the provider charged, no client retry: succeeded, one charge, one balanced movement, reconcile clean; a later retry replays it", async () => {
    const tenant = await newTenant("completer-kill");
    const key = newKey("kill");
    const body = { amount: "74.00", destination: "acct_test_slow" };
    const holder = payChild(tenant, key, body.amount, body.destination);
    const paymentId = await killOnceCharged(holder, tenant.id, key);
    expect(holder.output()).not.toContain("finished");
    expect(await ledgerFor(tenant.id, key)).toHaveLength(0);

    const outcomes = await completeUntilSettled(tenant.id, key);
    expect(outcomes.filter((o) => o.outcome === "completed")).toEqual([expect.objectContaining({ key, status: 201 })]);
    const [payment] = await paymentsForKey(tenant.id, key);
    expect(payment).toMatchObject({ id: paymentId, status: "succeeded", amount_captured_minor: 7400 });
    expect(await chargesFor(paymentId)).toEqual([expect.objectContaining({ id: payment!.psp_charge_id, amount: 7400, captured: true })]);
    await expectCaptureMovement(tenant.id, key, 7400);
    expect(await unbalancedTransactions(tenant.id)).toHaveLength(0);
    expect(await completerRow(tenant.id, key)).toMatchObject({
      state: "completed",
      response_status: 201,
      completed_by: "completer",
      needs_attention: false,
    });
    expect(await reconcile(database().db, await providerCharges(), { tenantId: tenant.id })).toEqual([]);
    await expectReplayOf(tenant, key, body, 201);
  });

  it("SIGKILL before the charge reached the provider: the completer charges, once", async () => {
    const tenant = await newTenant("completer-before");
    const key = newKey("before");
    const body = { amount: "12.00", destination: "acct_test_123" };
    await killedBeforeTheCharge(tenant, key, body);
    const [pending] = await paymentsForKey(tenant.id, key);
    expect(await chargesFor(pending!.id)).toHaveLength(0);

    await completeUntilSettled(tenant.id, key);
    expect(await paymentsForKey(tenant.id, key)).toEqual([expect.objectContaining({ id: pending!.id, status: "succeeded" })]);
    expect(await chargesFor(pending!.id)).toHaveLength(1);
    await expectCaptureMovement(tenant.id, key, 1200);
    expect(await completerRow(tenant.id, key)).toMatchObject({ completed_by: "completer" });
    await expectReplayOf(tenant, key, body, 201);
  });

  it("a decline after a crash: the completer stores the 402, a later retry replays it; no charge, no ledger", async () => {
    const tenant = await newTenant("completer-decline");
    const key = newKey("decline");
    const body = { amount: "9.00", destination: "acct_test_decline" };
    await killedBeforeTheCharge(tenant, key, body);

    await completeUntilSettled(tenant.id, key);
    const [payment] = await paymentsForKey(tenant.id, key);
    expect(payment).toMatchObject({ status: "failed" });
    expect(await chargesFor(payment!.id)).toHaveLength(0);
    expect(await ledgerFor(tenant.id, key)).toHaveLength(0);
    expect(await completerRow(tenant.id, key)).toMatchObject({ state: "failed", response_status: 402, completed_by: "completer" });
    await expectReplayOf(tenant, key, body, 402);
  });

  it("a holder that is alive and renewing is never taken over", async () => {
    const tenant = await newTenant("completer-alive");
    const key = newKey("alive");
    // The slow provider answers after 1.5 s; the holder's 1 s lease is renewed every third of it meanwhile.
    const holder = payChild(tenant, key, "5.00", "acct_test_slow");
    const outcomes: KeyCompletion[] = [];
    // The child keeps its pool open after it finished: it says so on standard output instead of exiting.
    const deadline = Date.now() + 20_000;
    while (!holder.output().includes("finished")) {
      expect(holder.child.exitCode, holder.output()).toBeNull();
      expect(Date.now(), "the holder never finished").toBeLessThan(deadline);
      outcomes.push(...(await app.completer.completeDueKeys({ ...FAST, tenantId: tenant.id })));
      await sleep(25);
    }
    expect(outcomes).toEqual([]);
    expect(await completerRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "1", completer_attempts: 0, completed_by: null });
    const [payment] = await paymentsForKey(tenant.id, key);
    expect(await chargesFor(payment!.id)).toHaveLength(1);
  });

  it("a provider down for several completer rounds, then back: retried with backoff, then one charge, completed", async () => {
    const tenant = await newTenant("completer-down");
    const key = newKey("down");
    const body = { amount: "21.00", destination: "acct_test_123" };
    const pending = await abandonedPayment(tenant, key, body);
    await withProviderDown(async (down) => {
      for (let round = 0; round < 4;) {
        const outcomes = await down.completer.completeDueKeys({ ...FAST, tenantId: tenant.id });
        for (const o of outcomes) expect(o).toMatchObject({ outcome: "retry_later" });
        round += outcomes.length;
        await sleep(30);
      }
    });
    const down = await completerRow(tenant.id, key);
    expect(down).toMatchObject({ state: "in_progress", completer_attempts: 4, needs_attention: false });
    expect(down.completer_error).toMatch(/provider/i);
    expect(await chargesFor(pending.id)).toHaveLength(0);

    await completeUntilSettled(tenant.id, key);
    expect(await chargesFor(pending.id)).toHaveLength(1);
    expect(await paymentsForKey(tenant.id, key)).toEqual([expect.objectContaining({ status: "succeeded" })]);
    await expectCaptureMovement(tenant.id, key, 2100);
    expect(await completerRow(tenant.id, key)).toMatchObject({ state: "completed", completer_attempts: 5, completed_by: "completer" });
  });

  it("after its attempt limit the key needs attention, with the last error; nothing is charged", async () => {
    const tenant = await newTenant("completer-limit");
    const key = newKey("limit");
    const pending = await abandonedPayment(tenant, key, { amount: "3.00", destination: "acct_test_123" });
    const outcomes = await withProviderDown((down) => completeUntilSettled(tenant.id, key, { maxAttempts: 2 }, down));
    expect(outcomes.map((o) => o.outcome)).toEqual(["retry_later", "needs_attention"]);
    const row = await completerRow(tenant.id, key);
    expect(row).toMatchObject({ state: "in_progress", completer_attempts: 2, needs_attention: true });
    expect(row.completer_error).toMatch(/provider/i);
    // Given up: later rounds leave it alone.
    expect(await app.completer.completeDueKeys({ ...FAST, tenantId: tenant.id })).toEqual([]);
    expect(await chargesFor(pending.id)).toHaveLength(0);
  });

  it("a stored request that no longer parses: needs attention with that reason, nothing runs", async () => {
    const tenant = await newTenant("completer-unparsable");
    const key = newKey("schema");
    const pending = await abandonedPayment(tenant, key, { amount: "4.00", destination: "acct_test_123" });
    // What a schema change since the claim looks like to the completer: a field the input no longer knows.
    await database().sql`
      update idempotency_keys set request = replace(request, '"currency"', '"currencyCode"')
      where tenant_id = ${tenant.id} and key = ${key}`;
    const outcomes = await app.completer.completeDueKeys({ ...FAST, tenantId: tenant.id });
    expect(outcomes).toEqual([
      expect.objectContaining({ outcome: "needs_attention", detail: expect.stringContaining("no longer parses") }),
    ]);
    const row = await completerRow(tenant.id, key);
    expect(row).toMatchObject({ state: "in_progress", fence: "1", needs_attention: true });
    expect(row.completer_error).toContain("no longer parses");
    expect(await chargesFor(pending.id)).toHaveLength(0);
  });

  it("two instances' completers and a client retry race for one key, 50 times: one execution, one charge, identical answers", async () => {
    const tenant = await newTenant("completer-race");
    const body = { amount: "2.00", destination: "acct_test_123" };
    for (let round = 0; round < 50; round++) {
      const key = newKey(`race${round}`);
      const pending = await abandonedPayment(tenant, key, body);
      const arrive = barrier(3);
      const [a, b, client] = await Promise.all([
        arrive().then(() => app.completer.completeDueKeys({ ...FAST, tenantId: tenant.id, key })),
        arrive().then(() => app.completer.completeDueKeys({ ...FAST, tenantId: tenant.id, key })),
        arrive().then(() => pay(tenant, key, body)),
      ]);
      const row = await completerRow(tenant.id, key);
      expect(row.state, `round ${round}: ${JSON.stringify({ a, b, client: client.text })}`).toBe("completed");
      expect(client.status).toBe(201);
      expect(client.text).toBe(row.response_body);
      // A completer either finished it (and says so on the key) or saw it was not its to finish.
      const finished = [...a, ...b].filter((o) => o.outcome === "completed");
      expect(finished.length).toBe(row.completed_by === "completer" ? 1 : 0);
      for (const o of [...a, ...b]) expect(["completed", "not_ours"]).toContain(o.outcome);
      expect(await chargesFor(pending.id)).toHaveLength(1);
      expect(await paymentsForKey(tenant.id, key)).toHaveLength(1);
      await expectCaptureMovement(tenant.id, key, 200);
      const replay = await api(tenant).post("/v1/payments", { ...body, currency: "EUR" }, key);
      expect(replay.text).toBe(row.response_body);
    }
    expect(await unbalancedTransactions(tenant.id)).toHaveLength(0);
  });
});

describe("reconciliation with the completer", () => {
  it("lists a second charge with the same reference; flags a pending payment only past the completer's budget", async () => {
    const tenant = await newTenant("completer-reconcile");
    const paid = await pay(tenant, newKey("paid"), { amount: "8.00" });
    expect(paid.status, paid.text).toBe(201);
    // A charge made with the payment's reference by someone else (another system, a bug): both must show.
    const second = await fetch(`${inject("pspUrl")}/charges`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": newKey("second") },
      body: JSON.stringify({ amount: 800, currency: "EUR", destination: "acct_test_123", capture: true, reference: paid.body.id }),
    });
    expect(second.status).toBe(201);
    const secondId = ((await second.json()) as { id: string }).id;
    const abandoned = await abandonedPayment(tenant, newKey("abandoned"), { amount: "6.00", destination: "acct_test_123" });

    const charges = await providerCharges();
    const within = await reconcile(database().db, charges, { tenantId: tenant.id, pendingGraceMs: app.settleWithinMs() });
    expect(within).toEqual([expect.objectContaining({ kind: "duplicate_charge", paymentId: paid.body.id, chargeId: secondId })]);
    const past = await reconcile(database().db, charges, { tenantId: tenant.id, pendingGraceMs: 0 });
    expect(past).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: "duplicate_charge" }),
        expect.objectContaining({ kind: "outcome_unknown", paymentId: abandoned.id }),
      ]),
    );
    expect(past).toHaveLength(2);
  });
});

describe("npm run keys:complete", () => {
  it("one round from the command line: finishes the tenant's abandoned payment, prints it, exits 0", async () => {
    const tenant = await newTenant("completer-cli");
    const key = newKey("cli");
    const pending = await abandonedPayment(tenant, key, { amount: "5.00", destination: "acct_test_123" });
    const { stdout } = await run(process.execPath, ["--import", "tsx", "scripts/keys-complete.ts", "--tenant", tenant.id], {
      env: { ...process.env, DATABASE_URL: inject("databaseUrl"), PSP_URL: inject("pspUrl"), LOG_LEVEL: "silent" },
    });
    expect(stdout).toBe(`${tenant.id} ${key} completed (201)\nCompleted 1 of 1 due idempotency keys.\n`);
    expect(await completerRow(tenant.id, key)).toMatchObject({ state: "completed", completed_by: "completer" });
    expect(await chargesFor(pending.id)).toHaveLength(1);
  });

  it("exits 1 while a key needs attention, also one an earlier round gave up on, and says so", async () => {
    const tenant = await newTenant("completer-cli-attention");
    const key = newKey("attention");
    await abandonedPayment(tenant, key, { amount: "5.00", destination: "acct_test_123" });
    // An earlier round gave up on it: it is no longer due, so this round takes nothing up.
    await database().sql`update idempotency_keys set completer_gave_up_at = now() where tenant_id = ${tenant.id} and key = ${key}`;
    const round = run(process.execPath, ["--import", "tsx", "scripts/keys-complete.ts", "--tenant", tenant.id], {
      env: { ...process.env, DATABASE_URL: inject("databaseUrl"), PSP_URL: inject("pspUrl"), LOG_LEVEL: "silent" },
    });
    await expect(round).rejects.toMatchObject({
      code: 1,
      stdout: "Completed 0 of 0 due idempotency keys.\n1 idempotency key(s) need attention: see /admin, or resume them there.\n",
    });
  });
});
