/**
 * Plays a scenario's browser side: the clicks, tabs, timeouts and retries a
 * shopper's browser would produce. A busy key (409) is retried after its
 * Retry-After, with the same key, as the checkout's own client does.
 */
import { LabTarget, type LabScenario } from "@/server/lab/scenarios";
import { deliverWebhookTwice, sendPayment, type Cart, type LabStart, type Sent } from "./lab-api";

export type BrowserAttempt = { client: number; attempt: number; at: number; outcome: string };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const PATIENT_MS = 30_000;
const MAX_BUSY_RETRIES = 20;

const describe = (sent: Sent): string => {
  if (sent.status === "lost") return "no answer: the connection dropped";
  if (sent.status === "timeout") return "gave up waiting (client timeout)";
  return `${sent.status}${"replayed" in sent && sent.replayed ? " replayed" : ""}`;
};

export async function playScenario(scenario: LabScenario, start: LabStart, target: LabTarget, cart: Cart, log: (a: BrowserAttempt) => void): Promise<void> {
  const began = performance.now();
  const note = (client: number, attempt: number, outcome: string) => log({ client, attempt, at: Math.round(performance.now() - began), outcome });

  /** Sends until the answer is not "busy", counting attempts from `first`. */
  const untilSettled = async (client: number, first: number, timeoutMs: number): Promise<Sent> => {
    for (let attempt = first; ; attempt++) {
      note(client, attempt, "sent");
      const sent = await sendPayment(start, target, cart, timeoutMs);
      note(client, attempt, describe(sent));
      if (sent.status !== 409 || attempt - first >= MAX_BUSY_RETRIES) return sent;
      await sleep(Math.min(sent.retryAfterMs ?? 500, 2_000));
    }
  };

  const plan = scenario.plan;
  switch (plan.kind) {
    case "together":
      await Promise.all(
        Array.from({ length: plan.clients }, async (_, i) => {
          await sleep(i * plan.staggerMs);
          await untilSettled(i + 1, 1, PATIENT_MS);
        }),
      );
      return;
    case "retry-after-failure": {
      const first = await untilSettled(1, 1, plan.timeoutMs);
      if (typeof first.status === "number" && first.status < 500) return;
      note(1, 1, `waiting ${plan.pauseMs} ms before retrying with the same request`);
      await sleep(plan.pauseMs);
      await untilSettled(1, 2, PATIENT_MS);
      return;
    }
    case "once":
      await untilSettled(1, 1, PATIENT_MS);
      return;
    case "webhook-twice":
      await untilSettled(1, 1, PATIENT_MS);
      note(1, 2, "asking the provider to deliver its refund event twice at once");
      await deliverWebhookTwice(start.runId);
      note(1, 2, "both deliveries answered");
      return;
  }
}
