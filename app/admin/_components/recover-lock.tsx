"use client";
/** Recover a key's lock: end its lease now so the next retry takes it over. Confirmed first, then audited. */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useTRPC } from "../../_trpc/client";
import { ConfirmAction } from "./confirm-action";

export function RecoverLock({ tenantId, keyName, stale }: { tenantId: string; keyName: string; stale: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const recover = useMutation(
    trpc.admin.keys.recover.mutationOptions({
      onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.admin.pathKey() }),
    }),
  );
  const outcome = recover.data
    ? { ok: true, message: "Lock recovered: the next retry with this key takes it over and finishes the work." }
    : recover.error
      ? { ok: false, message: `Recovery failed: ${recover.error.message}` }
      : undefined;
  const question = stale
    ? "End this key's lease now? Its holder stopped; the next retry takes the key over at once instead of waiting."
    : "This key's lease is still running: its holder may be working. End the lease now anyway? The next retry takes the key over, and the old holder can no longer complete it.";
  return (
    <ConfirmAction
      label="Recover lock"
      question={question}
      confirmLabel="Recover now"
      pending={recover.isPending}
      onConfirm={() => recover.mutate({ tenantId, key: keyName })}
      outcome={outcome}
    />
  );
}
