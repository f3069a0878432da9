/**
 * A payment charged at the provider and not recorded, made on the real
 * stack with the lab's crash simulation (demo mode): the checkout's worker
 * stops dead right after the provider charged, its lease cut to 2 s, and
 * the browser gives up waiting. `retry` sends the same request again.
 */
import { expect, type APIRequestContext } from "@playwright/test";
import type { Sql } from "postgres";

export async function chargedButUnrecorded(request: APIRequestContext, db: Sql) {
  const started = await request.post("/api/trpc/lab.start", { data: { scenario: "crash-after-charge", target: "protected" } });
  const { runId, key, destination } = ((await started.json()) as { result: { data: { runId: string; key: string; destination: string } } })
    .result.data;
  const [product] = await db<{ sku: string }[]>`select sku from products order by price_minor, sku limit 1`;
  const checkout = (timeout: number) =>
    request.post("/api/trpc/checkout.pay", {
      data: { items: [{ sku: product!.sku, quantity: 1 }], destination },
      headers: { "Lab-Run": runId, "Idempotency-Key": key },
      timeout,
    });
  await expect(checkout(1_500)).rejects.toThrow(/Timeout/);
  const [payment] = await db<{ tenant_id: string; id: string }[]>`select tenant_id, id from payments where idempotency_key = ${key}`;
  return { tenantId: payment!.tenant_id, paymentId: payment!.id, key, retry: () => checkout(15_000) };
}
