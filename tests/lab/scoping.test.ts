/**
 * The lab acts only on what its own runs created, over the real tRPC
 * endpoint in demo mode: a Lab-Run header on any other call arms nothing
 * and records nothing; the twin's webhook needs the provider's signature
 * and refunds only the run's own payments; batches are capped before any
 * procedure runs; runs are bounded in rate (exactly, across concurrent
 * starts) and count.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { createRun } from "../../server/lab/runs";

/** Runs this file starts directly, apart from the public start's limit. */
const ANY_RATE = { perMinute: Number.MAX_SAFE_INTEGER };
import { LAB_RUN_HEADER, LabTarget, labKeyOf, scenarioById } from "../../server/lab/scenarios";
import { signWebhook } from "../../server/psp/stand-in";
import { newPayment, PAYMENT, paymentsWhere } from "../payments/support";
import { barrier, newKey, newTenant, type Tenant } from "../support/api";
import { appWith } from "../support/app";

const BASE = "http://127.0.0.1/api/trpc";
/** Every call here is in demo mode; the process's app, as tests run, has it off. */
const demo = appWith({ DEMO_MODE: true });
const { GET, POST } = demo.trpc;
const post = (procedure: string, body: unknown, headers: Record<string, string> = {}) => {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return POST(
    new Request(`${BASE}/${procedure}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: text }),
  );
};

async function cart() {
  const [product] = await database().sql<{ sku: string }[]>`select sku from products order by sku limit 1`;
  return { items: [{ sku: product!.sku, quantity: 1 }], destination: "acct_test_lab" };
}

const runRow = async (id: string) => {
  const [row] = await database().sql<{ faults: string; requests: number; steps: number }[]>`
    select faults::text as faults, requests, (select count(*)::int from lab_steps s where s.run_id = r.id) as steps from lab_runs r where r.id = ${id}`;
  return row && { ...row, faults: JSON.parse(row.faults) as Record<string, unknown> };
};

let tenant: Tenant;
beforeAll(async () => {
  tenant = await newTenant("lab-scoping");
});

describe("Lab-Run", () => {
  it("on a tenant's own payments.create: ignored — the answer arrives, the run's switch stays armed, nothing is recorded", async () => {
    const run = await createRun(database(), scenarioById("lost-answer")!, LabTarget.Protected, ANY_RATE);
    const res = await post("payments.create", PAYMENT, {
      authorization: `Bearer ${tenant.token}`,
      "idempotency-key": newKey("scoped"),
      [LAB_RUN_HEADER]: run.id,
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(await res.text()).result.data.status).toBe("succeeded");
    expect(await runRow(run.id)).toEqual({ faults: { loseAnswer: true }, requests: 0, steps: 0 });
  });

  it("on the checkout under another key than the run's, or in a batch: ignored", async () => {
    const run = await createRun(database(), scenarioById("lost-answer")!, LabTarget.Protected, ANY_RATE);
    const other = await post("checkout.pay", await cart(), { "idempotency-key": newKey("not-the-run"), [LAB_RUN_HEADER]: run.id });
    expect(other.status).toBe(200);
    await other.text();
    const batch = await GET(
      new Request(`${BASE}/checkout.catalog,checkout.catalog?batch=1&input=${encodeURIComponent("{}")}`, {
        headers: { [LAB_RUN_HEADER]: run.id },
      }),
    );
    expect(batch.status).toBe(200);
    expect(await runRow(run.id)).toEqual({ faults: { loseAnswer: true }, requests: 0, steps: 0 });
    // Its own call does join it: the switch fires there, once.
    const own = await post("checkout.pay", await cart(), { "idempotency-key": labKeyOf(run.id), [LAB_RUN_HEADER]: run.id });
    await expect(own.text()).rejects.toThrow();
    expect((await runRow(run.id))!.faults).toEqual({});
  });
});

describe("the twin's webhook", () => {
  const event = (runId: string, paymentId: string) =>
    JSON.stringify({ id: `evt_lab_${runId}`, type: "charge.refunded", data: { paymentId, amount: "1.00" } });
  const signed = (body: string) => ({ "psp-signature": signWebhook(body, demo.settings.PSP_WEBHOOK_SECRET) });

  it("unsigned or wrongly signed: 401; signed but about another tenant's payment: 404; the payment untouched", async () => {
    const run = await createRun(database(), scenarioById("double-click")!, LabTarget.Naive, ANY_RATE);
    const victim = await newPayment(tenant, "25.00");
    const body = event(run.id, victim.id);
    const answers = [
      await post("lab.naiveWebhook", body),
      await post("lab.naiveWebhook", body, { "psp-signature": signWebhook(body, "whsec_someone_else") }),
      await post("lab.naiveWebhook", body, signed(body)),
    ];
    expect(answers.map((a) => a.status)).toEqual([401, 401, 404]);
    const [row] = await paymentsWhere({ id: victim.id });
    expect(Number(row!.amount_refunded_minor)).toBe(0);
  });

  it("signed and about the run's own payment: applied (each delivery, as the twin does)", async () => {
    const run = await createRun(database(), scenarioById("double-click")!, LabTarget.Naive, ANY_RATE);
    const paid = await post("lab.naivePay", await cart(), { [LAB_RUN_HEADER]: run.id });
    expect(paid.status).toBe(200);
    const { paymentId } = JSON.parse(await paid.text()).result.data as { paymentId: string };
    const body = event(run.id, paymentId);
    expect((await post("lab.naiveWebhook", body, signed(body))).status).toBe(200);
    const [row] = await paymentsWhere({ id: paymentId });
    expect(Number(row!.amount_refunded_minor)).toBe(100);
  });
});

describe("batches", () => {
  const names = (n: number, procedure: string) => Array.from({ length: n }, () => procedure).join(",");
  const input = (n: number) => encodeURIComponent(JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [i, {}]))));
  const runCount = async () => Number((await database().sql<{ n: string }[]>`select count(*) as n from lab_runs`)[0]!.n);

  it("ten calls are served; eleven are a 413 problem before any procedure runs (GET and POST)", async () => {
    const ten = await GET(new Request(`${BASE}/${names(10, "checkout.catalog")}?batch=1&input=${input(10)}`));
    expect(ten.status).toBe(200);
    expect(ten.headers.get("cache-control")).toBe("no-store");
    const eleven = await GET(new Request(`${BASE}/${names(11, "checkout.catalog")}?batch=1&input=${input(11)}`));
    expect(eleven.status).toBe(413);
    expect(eleven.headers.get("content-type")).toBe("application/problem+json");
    expect(await eleven.json()).toMatchObject({ status: 413, type: "/problems/batch-too-long" });

    const before = await runCount();
    const starts = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [i, { scenario: "double-click", target: "naive" }]));
    const refused = await POST(
      new Request(`${BASE}/${names(11, "lab.start")}?batch=1`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(starts),
      }),
    );
    expect(refused.status).toBe(413);
    expect(await runCount()).toBeLessThanOrEqual(before);
  });
});

describe("lab runs", () => {
  const startedWithin = async (seconds: number) =>
    (
      await database().sql<
        { n: number }[]
      >`select count(*)::int as n from lab_runs where created_at > now() - ${seconds} * interval '1 second'`
    )[0]!.n;

  it("concurrent starts never exceed the per-minute limit: the rest are 429", async () => {
    for (let round = 0; round < 3; round++) {
      // The baseline counts only runs that stay inside the minute for the whole round: one that
      // leaves it between this count and the starts would make room for a fifth start.
      const limits = { kept: 1000, perMinute: (await startedWithin(50)) + 4 };
      const arrive = barrier(12);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 12 }, async () => {
          await arrive();
          return createRun(database(), scenarioById("double-click")!, LabTarget.Naive, limits);
        }),
      );
      const refused = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason as { status?: number }] : []));
      expect(refused.every((r) => r.status === 429)).toBe(true);
      expect(refused.length).toBeGreaterThanOrEqual(8);
      // Other test files start runs meanwhile, under limits of their own: what this round admitted is counted by id.
      const admitted = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value.id] : []));
      const [stored] = await database().sql<
        { n: number }[]
      >`select count(*)::int as n from lab_runs where id in ${database().sql(admitted)}`;
      expect(stored!.n).toBe(admitted.length);
    }
  });

  it("keeps at most the limit: the oldest runs go first", async () => {
    // Only `kept` is under test: runs other tests started within the minute must not make these a 429.
    const unlimited = { kept: 1_000_000, perMinute: 1_000_000 };
    const oldest = await Promise.all([
      createRun(database(), scenarioById("double-click")!, LabTarget.Naive, unlimited),
      createRun(database(), scenarioById("double-click")!, LabTarget.Naive, unlimited),
    ]);
    const { sql } = database();
    await sql`update lab_runs set created_at = now() - interval '1 hour' where id in ${sql(oldest.map((r) => r.id))}`;
    const [all] = await sql<{ n: number }[]>`select count(*)::int as n from lab_runs`;
    const fresh = await createRun(database(), scenarioById("double-click")!, LabTarget.Naive, { kept: all!.n - 1, perMinute: 1000 });
    const left = await sql<{ id: string }[]>`select id from lab_runs where id in ${sql([...oldest, fresh].map((r) => r.id))}`;
    expect(left.map((r) => r.id)).toEqual([fresh.id]);
  });
});
