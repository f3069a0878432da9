"use client";
/** Purge expired keys now (all tenants, or the tenant the dashboard is filtered to), confirmed first. */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useTRPC } from "../../_trpc/client";
import { ConfirmAction } from "./confirm-action";
import { duration, number } from "./format";

export function PurgeExpired({ tenantId, sweepMs }: { tenantId?: string; sweepMs: number }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const purge = useMutation(
    trpc.admin.keys.purgeExpired.mutationOptions({
      onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.admin.pathKey() }),
    }),
  );
  const scope = tenantId ? `of tenant ${tenantId}` : "of every tenant";
  const outcome = purge.data
    ? {
        ok: true,
        message: `Deleted ${number(purge.data.deleted)} expired ${purge.data.deleted === 1 ? "key" : "keys"}${purge.data.remaining ? "; more remain, purge again to continue" : ""}.`,
      }
    : purge.error
      ? { ok: false, message: `The purge failed: ${purge.error.message}` }
      : undefined;
  return (
    <section aria-labelledby="purge-heading" className="card">
      <h2 id="purge-heading">Expired keys</h2>
      <p className="muted small">
        Expired keys are treated as new by the API
        {sweepMs > 0
          ? ` and deleted by the sweep every ${duration(sweepMs)}`
          : "; the sweep is off on this server (IDEMPOTENCY_SWEEP_MS=0), so they stay until purged"}
        ; purge them now if they pile up.
      </p>
      <ConfirmAction
        label="Purge expired keys"
        question={`Delete every expired key ${scope}? Their stored responses are gone for good; live keys are not touched.`}
        confirmLabel="Purge now"
        pending={purge.isPending}
        onConfirm={() => purge.mutate({ tenantId })}
        outcome={outcome}
      />
    </section>
  );
}
