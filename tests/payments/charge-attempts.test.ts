/**
 * The provider calls behind a charge are stored per payment: a payment made
 * by one app instance (its own process) shows its attempts, the failed first
 * one included, to another instance (this test process), over REST and tRPC.
 */
import { describe, expect, it } from "vitest";
import { app } from "../../server/app";
import { api, newKey, newTenant } from "../support/api";
import { chargesFor, expectProblem, pay, payChild, paymentsForKey } from "./support";

describe("charge attempts", () => {
  it("attempts made by another instance are read back in order: the provider's 5xx, then the charge", async () => {
    const [tenant, other] = await Promise.all([newTenant("attempts"), newTenant("attempts-other")]);
    const key = newKey("attempts");
    // The child keeps its pool open once it has paid: it is stopped when it says so.
    const child = payChild(tenant, key, "12.00", "acct_test_error");
    await child.killWhen(async () => child.output().includes("finished"));
    const [payment] = await paymentsForKey(tenant.id, key);
    expect(payment?.status).toBe("succeeded");
    expect(await chargesFor(payment!.id)).toHaveLength(1);

    const res = await api(tenant).get(`/v1/payments/${payment!.id}/attempts`);
    expect(res.status, res.text).toBe(200);
    const attempts = res.body.data as { status: number | null; replayed: boolean }[];
    expect(attempts.map((a) => [a.status, a.replayed])).toEqual([
      [500, false],
      [201, false],
    ]);
    const caller = app.createCaller(await app.createContextInner({ tenant, headers: new Headers() }));
    expect(await caller.payments.attempts({ id: payment!.id })).toEqual(res.body);
    expectProblem(await api(other).get(`/v1/payments/${payment!.id}/attempts`), 404, "not-found");
  });

  it("a declined charge shows its one attempt, the provider's 402", async () => {
    const tenant = await newTenant("attempts-replayed");
    const key = newKey("attempts-replayed");
    const first = await pay(tenant, key, { destination: "acct_test_decline" });
    expect(first.status, first.text).toBe(402);
    const id = first.body.paymentId as string;
    const res = await api(tenant).get(`/v1/payments/${id}/attempts`);
    expect((res.body.data as { status: number }[]).map((a) => a.status)).toEqual([402]);
  });
});
