"use client";
/**
 * "Resume now": run the completer for this key at once (a stale key, or one
 * the completer gave up on), as a client retry would. Confirmed first, then
 * audited; the outcome is shown.
 */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useTRPC } from "../../_trpc/client";
import { ConfirmAction } from "./confirm-action";

const OUTCOMES = {
  completed: "Completed by the completer",
  not_ours: "Another attempt had it",
  retry_later: "Not finished; the completer tries again later",
  needs_attention: "Not finished; still needs attention",
} as const;

export function ResumeNow({ tenantId, keyName }: { tenantId: string; keyName: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const resume = useMutation(
    trpc.admin.keys.resume.mutationOptions({
      onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.admin.pathKey() }),
    }),
  );
  const r = resume.data;
  const outcome = r
    ? { ok: r.outcome === "completed", message: `${OUTCOMES[r.outcome]}${r.status !== null ? ` (status ${r.status})` : ""}${r.detail ? `: ${r.detail}` : ""}.` }
    : resume.error
      ? { ok: false, message: `Resume failed: ${resume.error.message}` }
      : undefined;
  return (
    <ConfirmAction
      label="Resume now"
      question="Run this key's operation again now, from its stored request, resuming at its recovery point with the same downstream key? The provider dedupes the call: nothing is charged twice."
      confirmLabel="Resume"
      pending={resume.isPending}
      onConfirm={() => resume.mutate({ tenantId, key: keyName })}
      outcome={outcome}
    />
  );
}
