"use client";
/**
 * "Resume now": run the completer for this key at once (a stale key, or one
 * the completer gave up on), as a client retry would. Confirmed first, then
 * audited. The mutation belongs to the key's page (`useResume`), not to this
 * button: a resume that completes the key removes the button, and its
 * result must stay on the page.
 */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useTRPC } from "../../_trpc/client";
import { ConfirmAction } from "./confirm-action";
import { resumeOutcome } from "./format";

export function useResume() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return useMutation(
    trpc.admin.keys.resume.mutationOptions({
      onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.admin.pathKey() }),
    }),
  );
}

export type Resume = ReturnType<typeof useResume>;

/** The last resume's result in words, success or failure; none before one ran. */
export function resumeResult(resume: Resume): { ok: boolean; message: string } | undefined {
  if (resume.data) return { ok: resume.data.outcome === "completed", message: `Resume now: ${resumeOutcome(resume.data)}` };
  if (resume.error) return { ok: false, message: `Resume now failed: ${resume.error.message}` };
  return undefined;
}

export function ResumeNow({ tenantId, keyName, resume }: { tenantId: string; keyName: string; resume: Resume }) {
  return (
    <ConfirmAction
      label="Resume now"
      question="Run this key's operation again now, from its stored request, resuming at its recovery point with the same downstream key? The provider dedupes the call: nothing is charged twice."
      confirmLabel="Resume"
      pending={resume.isPending}
      onConfirm={() => resume.mutate({ tenantId, key: keyName })}
      outcome={resumeResult(resume)}
    />
  );
}
