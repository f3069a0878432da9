"use client";
/**
 * "Provider down for good", the protected side: the key the completer gave
 * up on, what an operator does about it (the admin's Resume now, once the
 * provider is back), and the counts again after they did.
 */
import { useState } from "react";
import { keyHref } from "@/app/admin/_components/format";
import type { LabReport } from "./lab-api";
import { plural } from "./story";

export function AttentionStory({ report, recount }: { report: LabReport; recount: () => Promise<void> }) {
  const [counting, setCounting] = useState(false);
  const { attention, key, tenantId } = report;
  if (!attention || !key) return null;
  const tries = plural(attention.attempts, "attempt");
  return (
    <div className="lab-attention small" data-testid="attention-story">
      {attention.finished ? (
        <p>
          Finished: the key is no longer in progress. An operator&apos;s Resume now ran the completer once more with the same key and the
          same provider key, so the provider charged once and the ledger booked one movement, as the counts above say.
        </p>
      ) : attention.needsAttention ? (
        <p>
          <strong>The key needs attention.</strong> The completer gave up after {tries} ({attention.lastError ?? "no answer"}); the payment
          is pending and nobody has been charged. Nothing is lost: the key stays in progress, and the dashboard lists it under “needs
          attention”. The provider is back now, so an operator can finish it: open the key{" "}
          <a href={keyHref(tenantId, key)} target="_blank" rel="noreferrer">
            {key} in the admin
          </a>{" "}
          and press <strong>Resume now</strong>, then count again.
        </p>
      ) : (
        <p>The completer has not given up on the key yet ({tries} so far).</p>
      )}
      <button
        type="button"
        className="secondary"
        disabled={counting}
        onClick={() => {
          setCounting(true);
          void recount().finally(() => setCounting(false));
        }}
      >
        Count again
      </button>
    </div>
  );
}
