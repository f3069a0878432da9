/**
 * The key cap (TENANT_MAX_LIVE_KEYS) over REST, on the app as it runs: it
 * refuses new keys only. At the cap a retry of a key the tenant holds gets
 * its stored answer, and a burst of new keys stops at the cap though the
 * count it decides from is up to 10 s old. Counted in rows: keys, payments.
 */
import { IDEMPOTENCY_ATTEMPT_HEADER } from "@exactly-once/trpc";
import { describe, expect, it, vi } from "vitest";
import { database } from "../../db/client";
import { PAYMENT, pay } from "../payments/support";
import { api, barrier, newKey, newTenant } from "../support/api";

const CAP = 6;
vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return { ...actual, env: { ...actual.env, TENANT_REQUESTS_PER_MINUTE: 0, TENANT_MAX_LIVE_KEYS: 6 } };
});

async function rowsOf(tenantId: string) {
  const [row] = await database().sql<{ keys: number; payments: number }[]>`
    select (select count(*)::int from idempotency_keys where tenant_id = ${tenantId}) as keys,
           (select count(*)::int from payments where tenant_id = ${tenantId}) as payments`;
  return row!;
}

describe("the key cap over REST", () => {
  it("at the cap, a retry of a held key gets its stored answer; a new key gets 429 key-quota-exceeded", async () => {
    const tenant = await newTenant("cap-replay");
    const keys = Array.from({ length: CAP }, () => newKey("held"));
    const firsts = [];
    for (const key of keys) firsts.push(await pay(tenant, key));
    expect(firsts.map((r) => r.status)).toEqual(keys.map(() => 201));

    const refused = await pay(tenant, newKey("over"));
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ type: "/problems/key-quota-exceeded" });
    expect(refused.headers.get("retry-after")).toBe("10");

    for (const extra of [{}, { [IDEMPOTENCY_ATTEMPT_HEADER]: "1" }] as Record<string, string>[]) {
      const retry = await api(tenant).post("/v1/payments", PAYMENT, keys[0]!, extra);
      expect(retry.status).toBe(201);
      expect(retry.text).toBe(firsts[0]!.text);
      expect(retry.headers.get("idempotent-replayed")).toBe("true");
    }
    expect(await rowsOf(tenant.id)).toEqual({ keys: CAP, payments: CAP });
  });

  it("a burst of 40 new keys leaves the tenant the cap's 6 keys, the rest refused", async () => {
    const tenant = await newTenant("cap-burst");
    const ready = barrier(40);
    const answers = await Promise.all(
      Array.from({ length: 40 }, async () => {
        await ready();
        return pay(tenant, newKey("burst"));
      }),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(CAP);
    for (const refused of answers.filter((a) => a.status !== 201))
      expect(refused.body).toMatchObject({ status: 429, type: "/problems/key-quota-exceeded" });
    expect(await rowsOf(tenant.id)).toEqual({ keys: CAP, payments: CAP });
  });
});
