/**
 * The lab page's requests, over the app's real tRPC endpoint: the checkout
 * procedure (with its Idempotency-Key) or the unprotected twin, each tagged
 * with its lab run, plus the lab's own start / webhook / report procedures.
 * Plain fetch, so the page sees exactly what a browser sees: statuses,
 * Retry-After, lost answers, timeouts.
 */
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "@/server/app";
import { LAB_REQUEST_HEADER, LAB_RUN_HEADER, LabTarget } from "@/server/lab/scenarios";

type Outputs = inferRouterOutputs<AppRouter>["lab"];
export type LabStart = Outputs["start"];
export type LabReport = Outputs["report"];
export type Cart = { items: { sku: string; quantity: number }[] };

const TRPC = "/api/trpc";

export class LabRequestError extends Error {
  override readonly name = "LabRequestError";
}

async function data<T>(response: Response): Promise<T> {
  const body = (await response.json()) as { result?: { data: T }; error?: { message?: string } };
  if (!response.ok || !body.result) throw new LabRequestError(`The lab could not do that (${response.status}).`);
  return body.result.data;
}

const post = <T>(procedure: string, input: unknown) =>
  fetch(`${TRPC}/lab.${procedure}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(input) }).then(data<T>);

export const startRun = (scenario: string, target: LabTarget) => post<LabStart>("start", { scenario, target });

export const deliverWebhookTwice = (runId: string) => post<unknown>("deliverWebhookTwice", { runId });

export const untilAttention = (runId: string) => post<Outputs["untilAttention"]>("untilAttention", { runId });

export const providerBack = (runId: string) => post<Outputs["providerBack"]>("providerBack", { runId });

export const reportOf = (runId: string) => fetch(`${TRPC}/lab.report?input=${encodeURIComponent(JSON.stringify({ runId }))}`).then(data<LabReport>);

export type Sent = { status: number; replayed: boolean; retryAfterMs?: number } | { status: "lost" | "timeout" };

/** One payment request of a run, numbered `n` by the browser: the real checkout with the run's key, or the twin without one. */
export async function sendPayment(start: LabStart, target: LabTarget, cart: Cart, timeoutMs: number, n: number): Promise<Sent> {
  const protectedCall = target === LabTarget.Protected;
  const headers: Record<string, string> = { "content-type": "application/json", [LAB_RUN_HEADER]: start.runId, [LAB_REQUEST_HEADER]: String(n) };
  if (protectedCall) headers["Idempotency-Key"] = start.key;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(`${TRPC}/${protectedCall ? "checkout.pay" : "lab.naivePay"}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ ...cart, destination: start.destination }),
      signal,
    });
    await response.arrayBuffer();
    const retryAfter = Number(response.headers.get("retry-after"));
    return {
      status: response.status,
      replayed: response.headers.get("idempotent-replayed") === "true",
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
    };
  } catch {
    return { status: signal.aborted ? "timeout" : "lost" };
  }
}
