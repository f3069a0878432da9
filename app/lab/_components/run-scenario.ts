/**
 * Plays a scenario's browser side: the clicks, tabs, timeouts and retries a
 * shopper's browser would produce. A busy key (409) is retried after its
 * Retry-After, with the same key, as the checkout's own client does.
 *
 * One numbering and one zero with the diagram: every request gets the next
 * number of the run (sent as Lab-Request, so the server's steps say "#n" of
 * the same request), and times count from the moment request #1 left, as
 * the diagram's count from the moment it arrived.
 */
import { LabTarget, type LabScenario } from "@/server/lab/scenarios";
import { deliverWebhookTwice, providerBack, sendPayment, untilAttention, type Cart, type LabStart, type Sent } from "./lab-api";

/** `request`: the run's number for the request this line is about; none for what is not a request (a pause). */
export type BrowserAttempt = { client: number; request?: number; at: number; outcome: string };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const PATIENT_MS = 30_000;
const MAX_BUSY_RETRIES = 20;

const describe = (sent: Sent): string => {
  if (sent.status === "lost") return "no answer: the connection dropped";
  if (sent.status === "timeout") return "gave up waiting (client timeout)";
  return `${sent.status}${"replayed" in sent && sent.replayed ? " replayed" : ""}`;
};

/** What the browser did, as it would list it. */
export async function playScenario(scenario: LabScenario, start: LabStart, target: LabTarget, cart: Cart): Promise<BrowserAttempt[]> {
  const attempts: BrowserAttempt[] = [];
  let firstSent: number | undefined;
  let requests = 0;
  const note = (client: number, request: number | undefined, outcome: string) => {
    const now = performance.now();
    attempts.push({ client, request, at: Math.round((now - (firstSent ?? now)) * 10) / 10, outcome });
  };

  /** Sends until the answer is not "busy". */
  const untilSettled = async (client: number, timeoutMs: number): Promise<Sent> => {
    for (let busy = 0; ; busy++) {
      const n = ++requests;
      firstSent ??= performance.now();
      note(client, n, "sent");
      const sent = await sendPayment(start, target, cart, timeoutMs, n);
      note(client, n, describe(sent));
      if (sent.status !== 409 || busy >= MAX_BUSY_RETRIES) return sent;
      await sleep(Math.min(sent.retryAfterMs ?? 500, 2_000));
    }
  };

  const plan = scenario.plan;
  switch (plan.kind) {
    case "together":
      await Promise.all(
        Array.from({ length: plan.clients }, async (_, i) => {
          await sleep(i * plan.staggerMs);
          await untilSettled(i + 1, PATIENT_MS);
        }),
      );
      break;
    case "retry-after-failure": {
      const first = await untilSettled(1, plan.timeoutMs);
      if (typeof first.status === "number" && first.status < 500) break;
      note(1, undefined, `waiting ${plan.pauseMs} ms before retrying with the same request`);
      await sleep(plan.pauseMs);
      await untilSettled(1, PATIENT_MS);
      break;
    }
    case "once":
      await untilSettled(1, PATIENT_MS);
      break;
    case "webhook-twice":
      await untilSettled(1, PATIENT_MS);
      note(1, undefined, "asking the provider to deliver its refund event twice at once");
      await deliverWebhookTwice(start.runId);
      note(1, undefined, "both deliveries answered");
      break;
    case "provider-down":
      await untilSettled(1, PATIENT_MS);
      // The shopper does not come back: whatever finishes the payment now is the server's.
      note(1, undefined, "the shopper gives up and leaves: no retry from this browser");
      await untilAttention(start.runId);
      await providerBack(start.runId);
      break;
  }
  return attempts;
}
