/**
 * A provider refusal other than a decline (a 4xx the provider will give the
 * same downstream key every time) is the domain's refusal: the payment
 * fails, the answer is stored and replayed byte for byte, and neither a
 * client retry nor the completer calls the provider again.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it, onTestFinished } from "vitest";
import { appWith } from "../support/app";
import { ledgerFor, newKey, newTenant } from "../support/api";
import { expectProblem, expectRefusal, keyRow, pay, paymentsForKey, sleep } from "./support";

/** An app whose provider refuses every charge with a 400, and the count of charge requests that provider got. */
async function refusingProvider() {
  const seen = { charges: 0 };
  const server = http.createServer((req, res) => {
    if (req.method === "POST" && req.url === "/charges") seen.charges++;
    req.resume();
    req.on("end", () => {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { type: "invalid_request", message: "destination: not an account this provider pays out to" } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  onTestFinished(async () => {
    await new Promise((r) => server.close(r));
  });
  return { seen, refusing: appWith({ PSP_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }) };
}

describe("a provider refusal", () => {
  it("fails the payment, is stored and replayed byte for byte, and the completer never calls the provider again", async () => {
    const { seen, refusing } = await refusingProvider();
    const tenant = await newTenant("provider-refusal");
    const key = newKey("refused");

    const first = await pay(tenant, key, {}, refusing);
    expectRefusal(first);
    expectProblem(first, 422, "provider-refused");
    expect(first.body).toMatchObject({ reason: "invalid_request" });
    expect(seen.charges).toBe(1);
    const [payment] = await paymentsForKey(tenant.id, key);
    expect(payment).toMatchObject({ status: "failed", psp_charge_id: null });
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "failed", response_status: 422, response_body: first.text });

    const replay = await pay(tenant, key, {}, refusing);
    expect(replay.status).toBe(422);
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");

    // Rounds with the shortest backoff: a released key would be taken up by the second at the latest.
    for (let round = 0; round < 5; round++) {
      expect(
        (await refusing.completer.completeDueKeys({ backoffMs: 20, maxBackoffMs: 100, tenantId: tenant.id })).filter((o) => o.key === key),
      ).toEqual([]);
      await sleep(50);
    }
    expect(seen.charges).toBe(1);
    expect(await paymentsForKey(tenant.id, key)).toHaveLength(1);
    expect(await ledgerFor(tenant.id, key)).toHaveLength(0);
  });
});
