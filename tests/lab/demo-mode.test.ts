/**
 * Demo mode is the only way into the failure lab: with it off, every lab
 * procedure answers 404 over the real tRPC endpoint and a Lab-Run header on
 * the checkout arms nothing; with it on, a run's switch fires once, for that
 * run only. And demo mode cannot be combined with real secrets.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { DEMO_TENANT } from "../../db/seed";
import { app, type App } from "../../server/app";
import { DEMO_ADMIN_PASSWORD } from "../../server/env";
import { createRun } from "../../server/lab/runs";

/** Runs this file starts directly, apart from the public start's limit. */
const ANY_RATE = { perMinute: Number.MAX_SAFE_INTEGER };
import { LAB_RUN_HEADER, LabTarget, labKeyOf, scenarioById } from "../../server/lab/scenarios";
import { appWith } from "../support/app";

const BASE = "http://127.0.0.1/api/trpc";
/** The process's app has demo mode off, as tests run; this one has it on. */
const demo = appWith({ DEMO_MODE: true });
const post = (procedure: string, body: unknown, headers: Record<string, string> = {}, via: App = demo) =>
  via.trpc.POST(
    new Request(`${BASE}/${procedure}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    }),
  );

async function cart() {
  const [product] = await database().sql<{ sku: string }[]>`select sku from products order by sku limit 1`;
  return { items: [{ sku: product!.sku, quantity: 1 }], destination: "acct_test_lab" };
}

/** The run as the database holds it: its armed switches, the twin's payments and the steps recorded. */
async function runRow(id: string) {
  const { sql } = database();
  const [row] = await sql<{ faults: string; naive_payment_ids: string[]; steps: number }[]>`
    select faults::text as faults, naive_payment_ids, (select count(*)::int from lab_steps s where s.run_id = r.id) as steps from lab_runs r where r.id = ${id}`;
  return row && { ...row, faults: JSON.parse(row.faults) as Record<string, unknown> };
}

const paymentsUnder = (key: string) =>
  database().sql<{ id: string; charges: number }[]>`
    select p.id, (select count(distinct transaction_id)::int from ledger_entries l where l.payment_id = p.id and l.ledger_account = 'sales') as charges
    from payments p where p.tenant_id = ${DEMO_TENANT.id} and p.idempotency_key = ${key}`;

describe("demo mode off", () => {
  it("answers 404 for every lab procedure, before reading its input", async () => {
    expect(app.settings.DEMO_MODE).toBe(false);
    const run = await createRun(database(), scenarioById("double-click")!, LabTarget.Naive, ANY_RATE);
    const answers = await Promise.all([
      post("lab.start", { scenario: "double-click", target: "protected" }, {}, app),
      post("lab.start", { scenario: "no such scenario", extra: true }, {}, app),
      post("lab.naivePay", await cart(), { [LAB_RUN_HEADER]: run.id }, app),
      post("lab.naiveWebhook", { id: `evt_lab_${run.id}`, type: "charge.refunded", data: { paymentId: "pay_x", amount: "1.00" } }, {}, app),
      post("lab.deliverWebhookTwice", { runId: run.id }, {}, app),
      app.trpc.GET(new Request(`${BASE}/lab.report?input=${encodeURIComponent(JSON.stringify({ runId: run.id }))}`)),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(404);
      expect(await answer.text()).not.toMatch(/lab run|stack|select /i);
    }
    expect((await runRow(run.id))?.naive_payment_ids).toEqual([]);
  });

  it("ignores a Lab-Run header: the run's switch stays armed (and the storefront is off)", async () => {
    const run = await createRun(database(), scenarioById("lost-answer")!, LabTarget.Protected, ANY_RATE);
    const res = await post("checkout.pay", await cart(), { [LAB_RUN_HEADER]: run.id, "idempotency-key": labKeyOf(run.id) }, app);
    expect(res.status).toBe(404);
    expect(await runRow(run.id)).toEqual({ faults: { loseAnswer: true }, naive_payment_ids: [], steps: 0 });
  });
});

describe("demo mode on", () => {
  it("drops the answer once, after the commit, for that run only; the retry replays the one payment", async () => {
    const started = await post("lab.start", { scenario: "lost-answer", target: "protected" });
    expect(started.status).toBe(200);
    const { runId, key } = JSON.parse(await started.text()).result.data as { runId: string; key: string };
    const other = await createRun(database(), scenarioById("lost-answer")!, LabTarget.Protected, ANY_RATE);

    const first = await post("checkout.pay", await cart(), { [LAB_RUN_HEADER]: runId, "idempotency-key": key });
    await expect(first.text()).rejects.toThrow();
    const committed = await paymentsUnder(key);
    expect(committed).toEqual([{ id: expect.any(String), charges: 1 }]);

    const retry = await post("checkout.pay", await cart(), { [LAB_RUN_HEADER]: runId, "idempotency-key": key });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await paymentsUnder(key)).toEqual(committed);
    // Another run's switch is its own.
    expect((await runRow(other.id))?.faults).toEqual({ loseAnswer: true });
    expect((await runRow(runId))?.faults).toEqual({});

    const report = await demo.trpc.GET(new Request(`${BASE}/lab.report?input=${encodeURIComponent(JSON.stringify({ runId }))}`));
    const { counts, steps } = JSON.parse(await report.text()).result.data as {
      counts: Record<string, unknown>;
      steps: { label: string }[];
    };
    expect(counts).toMatchObject({ payments: 1, providerCharges: 1, chargeMovements: 1 });
    expect(steps.map((s) => s.label)).toContainEqual(expect.stringMatching(/lost on the way \(simulated\)/));
  });

  it("keeps the twin inside a naive lab run: without one it is a 404", async () => {
    expect((await post("lab.naivePay", await cart())).status).toBe(404);
    const protectedRun = await createRun(database(), scenarioById("double-click")!, LabTarget.Protected, ANY_RATE);
    expect((await post("lab.naivePay", await cart(), { [LAB_RUN_HEADER]: protectedRun.id })).status).toBe(404);
  });
});

describe("the naive twin's calls", () => {
  it("answers at most the checkouts its scenario sends: 40 at once on a five-clicks run charge five, the rest are 422", async () => {
    const started = await post("lab.start", { scenario: "five-clicks", target: "naive" });
    const { runId } = JSON.parse(await started.text()).result.data as { runId: string };
    const body = await cart();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const calls = Array.from({ length: 40 }, async () => {
      await gate;
      return post("lab.naivePay", body, { [LAB_RUN_HEADER]: runId });
    });
    release();
    const statuses = (await Promise.all(calls)).map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(5).fill(200), ...Array(35).fill(422)]);
    const row = await runRow(runId);
    expect(row?.naive_payment_ids).toHaveLength(5);
    const report = await demo.trpc.GET(new Request(`${BASE}/lab.report?input=${encodeURIComponent(JSON.stringify({ runId }))}`));
    const { counts } = JSON.parse(await report.text()).result.data as { counts: Record<string, unknown> };
    expect(counts).toMatchObject({ payments: 5, providerCharges: 5, chargeMovements: 5 });
  });

  it("records nothing for a refused call, and draws only the start of a caller's key: 30 calls past the run's with 8,000-character keys", async () => {
    const started = await post("lab.start", { scenario: "double-click", target: "naive" });
    const { runId } = JSON.parse(await started.text()).result.data as { runId: string };
    const body = await cart();
    const longKey = (i: number) => `k${i}-${"x".repeat(8000)}`;
    const pay = (i: number) => post("lab.naivePay", body, { [LAB_RUN_HEADER]: runId, "idempotency-key": longKey(i) });
    for (const i of [1, 2]) expect((await pay(i)).status).toBe(200);
    const served = await runRow(runId);
    const refused = await Promise.all(Array.from({ length: 30 }, (_, i) => pay(i + 3)));
    expect(refused.map((r) => r.status)).toEqual(Array(30).fill(422));
    expect((await runRow(runId))?.steps).toBe(served?.steps);
    const [longest] = await database().sql<{ n: number }[]>`select max(length(label))::int as n from lab_steps where run_id = ${runId}`;
    expect(longest!.n).toBeLessThan(200);
  });
});

describe("the environment", () => {
  const load = (extra: Record<string, string>) => {
    const { ADMIN_PASSWORD: _unset, DEMO_MODE: _off, ...inherited } = process.env;
    return spawnSync(process.execPath, ["--import", "tsx", "-e", 'await import("./server/env.ts")'], {
      env: { ...inherited, NODE_ENV: "production", ...extra },
      encoding: "utf8",
    });
  };

  it("refuses demo mode with a real admin password, and accepts it with the demo one", () => {
    const refused = load({ DEMO_MODE: "true", ADMIN_PASSWORD: "a real and long password" });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("DEMO_MODE: only with the demo secrets");
    expect(load({ DEMO_MODE: "true", ADMIN_PASSWORD: DEMO_ADMIN_PASSWORD }).status).toBe(0);
    expect(load({ ADMIN_PASSWORD: "a real and long password" }).status).toBe(0);
  });
});
