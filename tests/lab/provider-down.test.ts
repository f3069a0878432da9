/**
 * The lab's "provider down for good": the provider is unreachable for that
 * run's calls only (a checkout outside the run, at the same moment, is
 * charged), the completer gives up on the run's key after the lab's budget
 * and the key needs attention; once the lab brings the provider back, the
 * admin's Resume now finishes it with one charge and one movement, and a
 * second Resume now is refused. The twin's payment is left pending, with
 * nothing that could finish it.
 */
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { DEMO_TENANT } from "../../db/seed";
import { DEMO_ADMIN_PASSWORD } from "../../server/env";
import { LAB_COMPLETER_BUDGET, LAB_RUN_HEADER } from "../../server/lab/scenarios";
import { adminCaller } from "../admin/support";
import { chargesFor, providerCharges } from "../payments/support";
import { appWith } from "../support/app";

const BASE = "http://127.0.0.1/api/trpc";
/** As the run command has it in demo mode: the lab's switches and the admin's demo password. */
const demo = appWith({ DEMO_MODE: true, ADMIN_PASSWORD: DEMO_ADMIN_PASSWORD });
const { GET, POST } = demo.trpc;
const post = (procedure: string, body: unknown, headers: Record<string, string> = {}) =>
  POST(
    new Request(`${BASE}/${procedure}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    }),
  );
const data = async <T>(res: Response): Promise<T> => {
  expect(res.status).toBe(200);
  return (JSON.parse(await res.text()) as { result: { data: T } }).result.data;
};

type Report = {
  attention: { needsAttention: boolean; attempts: number; finished: boolean } | null;
  counts: { payments: number; paymentIds: string[]; pendingPayments: number; providerCharges: number; chargeMovements: number };
  steps: { from: string; to: string; label: string }[];
};
const report = async (runId: string) =>
  data<Report>(await GET(new Request(`${BASE}/lab.report?input=${encodeURIComponent(JSON.stringify({ runId }))}`)));

async function cart() {
  const [product] = await database().sql<{ sku: string }[]>`select sku from products order by sku limit 1`;
  return { items: [{ sku: product!.sku, quantity: 1 }], destination: "acct_test_lab" };
}

const start = async (target: "protected" | "naive") =>
  data<{ runId: string; key: string }>(await post("lab.start", { scenario: "provider-down", target }));

describe("the lab's provider down for good", () => {
  it("needs attention after the lab's budget, for that run only; Resume now once the provider is back charges once, a second is refused", async () => {
    const { runId, key } = await start("protected");
    const [down, elsewhere] = await Promise.all([
      post("checkout.pay", await cart(), { [LAB_RUN_HEADER]: runId, "idempotency-key": key }),
      // The same moment, outside the run: the switch is the run's, not the provider client's.
      post("checkout.pay", await cart(), { "idempotency-key": `elsewhere-${runId}` }),
    ]);
    expect(down.status).toBe(503);
    expect(elsewhere.status).toBe(200);

    const attention = await data<{ needsAttention: boolean; attempts: number; finished: boolean }>(
      await post("lab.untilAttention", { runId }),
    );
    expect(attention).toMatchObject({ needsAttention: true, finished: false });
    expect(attention.attempts).toBe(LAB_COMPLETER_BUDGET.maxAttempts);
    const waiting = await report(runId);
    expect(waiting.counts).toMatchObject({ payments: 1, pendingPayments: 1, providerCharges: 0, chargeMovements: 0 });
    const lines = waiting.steps.map((s) => `${s.from} → ${s.to}: ${s.label}`);
    expect(lines.filter((l) => l.startsWith("completer → app: completer takes the key up"))).toHaveLength(LAB_COMPLETER_BUDGET.maxAttempts);
    expect(lines.filter((l) => /^provider → app: the provider did not answer$/.test(l)).length).toBeGreaterThanOrEqual(
      LAB_COMPLETER_BUDGET.maxAttempts + 1,
    );
    expect(lines.at(-1)).toBe(
      `completer → app: completer gives up after ${LAB_COMPLETER_BUDGET.maxAttempts} attempts: the key needs attention`,
    );

    const admin = await adminCaller(demo);
    // Still down: Resume now runs, fails, and nothing is charged.
    expect(await admin.admin.keys.resume({ tenantId: DEMO_TENANT.id, key })).toMatchObject({ outcome: "needs_attention" });
    expect(await chargesFor(waiting.counts.paymentIds[0]!)).toHaveLength(0);

    expect(await data<{ wasDown: boolean }>(await post("lab.providerBack", { runId }))).toEqual({ wasDown: true });
    expect(await admin.admin.keys.resume({ tenantId: DEMO_TENANT.id, key })).toEqual({ outcome: "completed", status: 200, detail: null });
    await expect(admin.admin.keys.resume({ tenantId: DEMO_TENANT.id, key })).rejects.toThrow(/Only an unfinished key can be resumed/);

    const done = await report(runId);
    expect(done.attention).toMatchObject({ needsAttention: false, finished: true });
    expect(done.counts).toMatchObject({ payments: 1, pendingPayments: 0, providerCharges: 1, chargeMovements: 1 });
    expect(await chargesFor(done.counts.paymentIds[0]!, await providerCharges())).toHaveLength(1);
  });

  it("the twin: its payment stays pending with no key for anyone to finish, even after the provider is back", async () => {
    const { runId } = await start("naive");
    expect((await post("lab.naivePay", await cart(), { [LAB_RUN_HEADER]: runId })).status).toBe(503);
    expect(await data<null>(await post("lab.untilAttention", { runId }))).toBeNull();
    expect(await data<{ wasDown: boolean }>(await post("lab.providerBack", { runId }))).toEqual({ wasDown: true });
    const { counts, attention, steps } = await report(runId);
    expect(attention).toBeNull();
    expect(steps.filter((s) => s.from === "completer")).toEqual([]);
    expect(steps.map((s) => s.label)).toContain("no key, so nothing for the completer to pick up: the payment stays pending");
    expect(counts).toMatchObject({ payments: 1, pendingPayments: 1, providerCharges: 0, chargeMovements: 0 });
  });
});
