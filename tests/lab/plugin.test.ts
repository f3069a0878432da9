/**
 * The lab as a plug-in, over the real endpoints in demo mode: the crash after
 * the charge is the provider decorator (the worker stops dead once the
 * provider charged) plus the runtime variant (the run's key is claimed with
 * the crash's short lease, never renewed), so a retry after that lease takes
 * the key over and finishes with the one charge; the phases are drawn from
 * the middleware's events; a lab webhook delivery is drawn into its run by
 * the REST edge, and with demo mode off nothing is.
 */
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { DEMO_TENANT } from "../../db/seed";
import { createRun } from "../../server/lab/runs";

/** Runs this file starts directly, apart from the public start's limit. */
const ANY_RATE = { perMinute: Number.MAX_SAFE_INTEGER };
import { LAB_RUN_HEADER, LabTarget, scenarioById } from "../../server/lab/scenarios";
import { chargesFor, deliver, newPayment, paymentsForKey, signed } from "../payments/support";
import { newTenant } from "../support/api";
import { appWith } from "../support/app";

const BASE = "http://127.0.0.1/api/trpc";
/** The process's app has demo mode off, as tests run; this one has it on. */
const demo = appWith({ DEMO_MODE: true });
const { GET, POST } = demo.trpc;
const post = (procedure: string, body: unknown, headers: Record<string, string> = {}) =>
  POST(
    new Request(`${BASE}/${procedure}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    }),
  );

async function cart(destination: string) {
  const [product] = await database().sql<{ sku: string }[]>`select sku from products order by sku limit 1`;
  return { items: [{ sku: product!.sku, quantity: 1 }], destination };
}

const stepsOf = async (runId: string) =>
  (await database().sql<{ label: string }[]>`select label from lab_steps where run_id = ${runId} order by at_ms, seq, id`).map(
    (s) => s.label,
  );

describe("worker crash right after the charge", () => {
  it("stops the worker once the provider charged; the retry after the crash's lease takes over and records the one charge", async () => {
    const started = await post("lab.start", { scenario: "crash-after-charge", target: "protected" });
    const { runId, key, destination } = (
      JSON.parse(await started.text()) as { result: { data: { runId: string; key: string; destination: string } } }
    ).result.data;
    const leaseMs = scenarioById("crash-after-charge")!.faults.crashAfterChargeLeaseMs!;
    const headers = { [LAB_RUN_HEADER]: runId, "idempotency-key": key };

    // The stopped worker never answers: its request is left hanging, as a crashed process leaves its client.
    const crashed = post("checkout.pay", await cart(destination), headers);
    void crashed.catch(() => undefined);
    await expect
      .poll(() => stepsOf(runId), { timeout: 10_000 })
      .toContainEqual(expect.stringMatching(/^worker stops dead after the charge/));
    const [pending] = await paymentsForKey(DEMO_TENANT.id, key);
    expect(pending?.status).toBe("pending");
    expect(await chargesFor(pending!.id)).toHaveLength(1);

    // A retry at once waits for the key (a bounded wait, shorter than the app's 30 s lease) until the
    // crash's short lease runs out, then takes the key over: with the app's lease it would be a 409.
    const sent = Date.now();
    const retry = await post("checkout.pay", await cart(destination), headers);
    expect(retry.status).toBe(200);
    await retry.text();
    expect(Date.now() - sent).toBeLessThan(leaseMs + 5_000);
    const [paid] = await paymentsForKey(DEMO_TENANT.id, key);
    expect(paid).toMatchObject({ id: pending!.id, status: "succeeded" });
    expect(await chargesFor(paid!.id)).toHaveLength(1);
    const [row] = await database().sql<
      { fence: number }[]
    >`select fence::int as fence from idempotency_keys where tenant_id = ${DEMO_TENANT.id} and key = ${key}`;
    expect(row!.fence).toBe(2);

    const report = await GET(new Request(`${BASE}/lab.report?input=${encodeURIComponent(JSON.stringify({ runId }))}`));
    const { counts } = (JSON.parse(await report.text()) as { result: { data: { counts: Record<string, number> } } }).result.data;
    expect(counts).toMatchObject({ payments: 1, providerCharges: 1, chargeMovements: 1 });
    const steps = await stepsOf(runId);
    expect(steps).toContainEqual(expect.stringMatching(/^phase "placed" committed \(recovery point\)$/));
    expect(steps).toContainEqual(expect.stringMatching(/^key takeover, fence 2/));
    expect(steps).toContainEqual('phase "placed" skipped: committed by an earlier attempt');
    expect(steps).toContainEqual(expect.stringMatching(/from its record of this key: no second charge$/));
    expect(steps.filter((s) => s.startsWith("money moved:"))).toHaveLength(1);
  });
});

describe("a lab webhook at the REST edge", () => {
  const refundOf = (runId: string, paymentId: string) =>
    signed({ id: `evt_lab_${runId}`, type: "charge.refunded", data: { paymentId, amount: "1.00" } });

  it("is drawn into its run: applied once, then recognised as a duplicate", async () => {
    const run = await createRun(database(), scenarioById("webhook-twice")!, LabTarget.Protected, ANY_RATE);
    const paid = await newPayment(await newTenant("lab-webhook"));
    const { raw, signature } = refundOf(run.id, paid.id);
    expect((await deliver(raw, signature, demo)).status).toBe(200);
    expect((await deliver(raw, signature, demo)).status).toBe(200);
    expect(await stepsOf(run.id)).toEqual([
      `webhook evt_lab_${run.id} applied once, its id recorded`,
      `webhook evt_lab_${run.id} recognised as a duplicate: nothing applied`,
    ]);
  });

  it("with demo mode off: processed as any event, and nothing is drawn", async () => {
    const run = await createRun(database(), scenarioById("webhook-twice")!, LabTarget.Protected, ANY_RATE);
    const paid = await newPayment(await newTenant("lab-webhook-off"));
    const { raw, signature } = refundOf(run.id, paid.id);
    const answer = await deliver(raw, signature);
    expect(answer).toMatchObject({ status: 200, body: { received: true, duplicate: false } });
    expect(await stepsOf(run.id)).toEqual([]);
  });
});
