"use client";
/**
 * A two-step button for actions that change data: the first press explains
 * what will happen and asks; only "Confirm" acts. The outcome is announced.
 */
import { useState, type ReactNode } from "react";

type Props = {
  label: string;
  /** What the action will do, shown before it is confirmed. */
  question: ReactNode;
  confirmLabel: string;
  pending: boolean;
  onConfirm: () => void;
  /** The last outcome, success or failure, in words. */
  outcome?: { ok: boolean; message: string } | undefined;
};

export function ConfirmAction({ label, question, confirmLabel, pending, onConfirm, outcome }: Props) {
  const [asking, setAsking] = useState(false);
  return (
    <div className="confirm-action">
      {asking ? (
        <div className="confirm" role="group" aria-label={label}>
          <p>{question}</p>
          <button
            type="button"
            className="danger"
            disabled={pending}
            onClick={() => {
              setAsking(false);
              onConfirm();
            }}
          >
            {confirmLabel}
          </button>{" "}
          <button type="button" className="secondary" onClick={() => setAsking(false)}>
            Cancel
          </button>
        </div>
      ) : (
        <button type="button" className="secondary" disabled={pending} onClick={() => setAsking(true)}>
          {pending ? "Working…" : `${label}…`}
        </button>
      )}
      <p role="status" className={outcome && !outcome.ok ? "error" : "muted small"}>
        {outcome?.message}
      </p>
    </div>
  );
}
