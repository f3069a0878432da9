"use client";
/** The demo's explanation: the key this checkout uses, every attempt made with it, and what the server saw. */
import { useEffect, useState } from "react";
import type { Attempt } from "@/server/idempotency/client/link";
import { checkoutClient } from "./client";
import { useAttempts } from "./use-attempts";

type ServerView = Awaited<ReturnType<typeof checkoutClient.checkout.keyStatus.query>>;

const LABELS: Record<Attempt["outcome"], string> = {
  sent: "sent",
  succeeded: "answered",
  "network-error": "connection lost",
  "in-progress": "409: still in progress",
  "server-error": "server error",
  refused: "a final answer, not retried",
  "gave-up": "gave up",
};

export function AttemptsPanel({ idempotencyKey }: { idempotencyKey?: string }) {
  const attempts = useAttempts(idempotencyKey);
  const [server, setServer] = useState<{ key: string; view: ServerView }>();

  useEffect(() => {
    if (!idempotencyKey) return;
    let stop = false;
    let timer: ReturnType<typeof setTimeout>;
    const poll = async () => {
      const view = await checkoutClient.checkout.keyStatus.query({ key: idempotencyKey }).catch(() => null);
      if (stop) return;
      setServer({ key: idempotencyKey, view });
      timer = setTimeout(() => void poll(), 1500);
    };
    void poll();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [idempotencyKey]);

  const view = server && server.key === idempotencyKey ? server.view : null;
  return (
    <section aria-labelledby="attempts-heading" className="card attempts">
      <h2 id="attempts-heading">Idempotency</h2>
      {!idempotencyKey ? (
        <p className="muted">A key is minted when your cart changes and kept until the order is paid.</p>
      ) : (
        <>
          <p>
            Key: <code data-testid="idempotency-key">{idempotencyKey}</code>
          </p>
          {view && (
            <p className="small">
              Server: <strong>{view.state.replace("_", " ")}</strong>
              {view.responseStatus ? `, stored ${view.responseStatus}` : ""}, replayed {view.replayCount}×
              {view.fence > 1 ? `, taken over ${view.fence - 1}×` : ""}, request hash <code>{view.fingerprint.slice(0, 12)}</code>
            </p>
          )}
          <ol aria-label="Attempts" className="small">
            {attempts
              .filter((a) => a.outcome !== "sent")
              .map((a, i) => (
                <li key={i}>
                  {a.attempt > 1 ? `Retry ${a.attempt - 1}: ` : "Request: "}
                  {LABELS[a.outcome]}
                  {a.status ? ` (${a.status})` : ""}
                  {a.replayed ? " — replayed from the stored result" : ""}
                  {a.retryInMs !== undefined ? ` — retrying in ${(a.retryInMs / 1000).toFixed(1)} s with the same key` : ""}
                </li>
              ))}
          </ol>
        </>
      )}
    </section>
  );
}
