"use client";
/** The demo's explanation: the key this checkout uses, every attempt made with it, and what the server saw. */
import { useEffect, useState } from "react";
import type { Attempt } from "@exactly-once/trpc/client";
import { checkoutClient, PAGE_LOADED_AT } from "./client";
import { useAttempts } from "./use-attempts";

type ServerView = Awaited<ReturnType<typeof checkoutClient.checkout.keyStatus.query>>;

const LABELS: Record<Attempt["outcome"], string> = {
  sent: "sent",
  joined: "a second click joined the attempt already running",
  succeeded: "answered",
  "network-error": "connection lost",
  "in-progress": "409: still in progress",
  "server-error": "server error",
  refused: "a final answer, not retried",
  "gave-up": "gave up",
};

/**
 * One line per attempt: a request still on its way shows as in flight until
 * its outcome is recorded, which then takes its place.
 */
function outcomeText(a: Attempt): string {
  return [
    LABELS[a.outcome],
    a.status ? ` (${a.status})` : "",
    a.replayed ? " — replayed from the stored result" : "",
    a.retryInMs !== undefined ? ` — retrying in ${(a.retryInMs / 1000).toFixed(1)} s with the same key` : "",
  ].join("");
}

type Shown = { attempt: Attempt; state: "settled" | "in-flight" | "cut-off" };

function shownAttempts(attempts: Attempt[]): Shown[] {
  // The last thing an earlier page recorded, if this page was loaded since: a reload cut it off.
  const lastBeforeLoad = attempts.findLastIndex((a) => a.at < PAGE_LOADED_AT);
  return attempts.flatMap((a, i): Shown[] => {
    // A reload aborts the request in flight, which the old page may still have noted as a lost connection.
    if (i === lastBeforeLoad && a.outcome === "network-error") return [{ attempt: a, state: "cut-off" }];
    if (a.outcome !== "sent") return [{ attempt: a, state: "settled" }];
    const samePage = (later: Attempt) => later.at < PAGE_LOADED_AT === a.at < PAGE_LOADED_AT;
    const settled = attempts
      .slice(i + 1)
      .some((later) => samePage(later) && later.attempt === a.attempt && later.outcome !== "sent" && later.outcome !== "joined");
    if (settled) return [];
    // Sent by an earlier page that was reloaded before the answer came: that page never heard back.
    return [{ attempt: a, state: a.at < PAGE_LOADED_AT ? "cut-off" : "in-flight" }];
  });
}

/**
 * The server's replay count, as the dashboard shows it. Replays are recorded
 * in batches a moment after they are answered, so for that moment this
 * browser may have seen more than the server has counted: said, not hidden.
 */
function replays(recorded: number, seenHere: number): string {
  const text = `${recorded} ${recorded === 1 ? "replay" : "replays"} recorded`;
  return seenHere > recorded ? `${text} (the latest is being recorded)` : text;
}

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
  const seenReplays = attempts.filter((a) => a.replayed).length;
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
              {view.responseStatus ? `, stored ${view.responseStatus}` : ""}, {replays(view.replayCount, seenReplays)}
              {view.fence > 1 ? `, taken over ${view.fence - 1}×` : ""}, request hash <code>{view.fingerprint.slice(0, 12)}</code>
            </p>
          )}
          <ol aria-label="Attempts" className="small">
            {shownAttempts(attempts).map(({ attempt: a, state }, i) => (
              <li key={i}>
                {a.attempt > 1 ? `Retry ${a.attempt - 1}: ` : "Request: "}
                {state === "in-flight" ? "in flight…" : state === "cut-off" ? "cut off by the page reload" : outcomeText(a)}
              </li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}
