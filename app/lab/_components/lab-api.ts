/**
 * The lab page's requests, through the app's one client (app/_trpc/client.tsx)
 * to its real tRPC endpoint: the checkout procedure (with its
 * Idempotency-Key) or the unprotected twin, each tagged with its lab run,
 * plus the lab's own start / webhook / report procedures. A payment request
 * is one attempt of its own (the scenario plays the browser's retries), and
 * the page sees what a browser sees: statuses, Retry-After, replays, lost
 * answers, timeouts.
 */
import { TRPCClientError } from "@trpc/client";
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "@/server/app";
import { LAB_REQUEST_HEADER, LAB_RUN_HEADER, LabTarget } from "@/server/lab/scenarios";
import { createAppClient, type CallContext } from "../../_trpc/client";

type Outputs = inferRouterOutputs<AppRouter>["lab"];
export type LabStart = Outputs["start"];
export type LabReport = Outputs["report"];
export type Cart = { items: { sku: string; quantity: number }[] };

const client = createAppClient();

export class LabRequestError extends Error {
  override readonly name = "LabRequestError";
}

/**
 * The server answered with an error: a LabRequestError in the server's own words (its problem's detail, written
 * for the reader: "At most 30 lab runs start per minute; try again shortly."); no answer stays a network error.
 */
async function labCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const status = error instanceof TRPCClientError ? (error.data as { httpStatus?: number } | undefined)?.httpStatus : undefined;
    if (status !== undefined)
      throw new LabRequestError((error as Error).message || `The lab could not do that (${status}).`, { cause: error });
    throw error;
  }
}

export const startRun = (scenario: string, target: LabTarget) => labCall(() => client.lab.start.mutate({ scenario, target }));

export const deliverWebhookTwice = (runId: string) => labCall(() => client.lab.deliverWebhookTwice.mutate({ runId }));

export const untilAttention = (runId: string) => labCall(() => client.lab.untilAttention.mutate({ runId }));

export const providerBack = (runId: string) => labCall(() => client.lab.providerBack.mutate({ runId }));

export const reportOf = (runId: string) => labCall(() => client.lab.report.query({ runId }));

export type Sent = { status: number; replayed: boolean; retryAfterMs?: number } | { status: "lost" | "timeout" };

/** One payment request of a run, numbered `n` by the browser: the real checkout with the run's key, or the twin without one. */
export async function sendPayment(start: LabStart, target: LabTarget, cart: Cart, timeoutMs: number, n: number): Promise<Sent> {
  const protectedCall = target === LabTarget.Protected;
  let response: Response | undefined;
  const context: CallContext = {
    // The key as a plain header, not the link's `idempotencyKey`: the scenario itself plays every retry.
    headers: { [LAB_RUN_HEADER]: start.runId, [LAB_REQUEST_HEADER]: String(n), ...(protectedCall ? { "Idempotency-Key": start.key } : {}) },
    onResponse: (r) => (response = r),
  };
  const signal = AbortSignal.timeout(timeoutMs);
  const input = { ...cart, destination: start.destination };
  try {
    await (protectedCall ? client.checkout.pay.mutate(input, { signal, context }) : client.lab.naivePay.mutate(input, { signal, context }));
  } catch {
    // A refusal is an answer like any other: its status is in the response.
  }
  if (!response) return { status: signal.aborted ? "timeout" : "lost" };
  const retryAfter = Number(response.headers.get("retry-after"));
  return {
    status: response.status,
    replayed: response.headers.get("idempotent-replayed") === "true",
    ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
  };
}
