"use client";
/** One key in full, refreshed every 5 seconds, with the recover and resume actions when it is in progress. */
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../_trpc/client";
import { AuditLog } from "./audit-log";
import { pretty } from "./format";
import { KeyFields } from "./key-fields";
import { LedgerEntries, ProviderCharges, Timeline } from "./key-history";
import { QueryError } from "./query-error";
import { RecoverLock } from "./recover-lock";
import { ResumeNow, resumeResult, useResume } from "./resume-now";

/**
 * `completerOn`: this server runs the completer (COMPLETER_INTERVAL_MS > 0), so the key's fields say what will happen.
 * `mayAct`: the operator may resume and recover (a viewer may not, so a viewer is shown no such button).
 */
export function KeyDetailView({
  tenantId,
  keyName,
  completerOn,
  mayAct,
}: {
  tenantId: string;
  keyName: string;
  completerOn: boolean;
  mayAct: boolean;
}) {
  const trpc = useTRPC();
  const detail = useQuery(trpc.admin.keys.get.queryOptions({ tenantId, key: keyName }, { refetchInterval: 5_000 }));
  const resume = useResume();
  if (detail.error) return <QueryError error={detail.error} />;
  if (!detail.data) return <p className="muted">Loading the key…</p>;
  const { key: k, timeline, ledger, payments } = detail.data;
  const recoverable = k.storedState === "in_progress" && k.state !== "expired";
  // The completer can run it now: nobody holds a live lease, or the completer gave up on it.
  const resumable = recoverable && (k.stale || k.state === "needs_attention");
  // Once the key is finished the buttons go, but what the last "Resume now" did stays in view.
  const resumed = resumable ? undefined : resumeResult(resume);
  return (
    <>
      <section aria-labelledby="fields-heading">
        <h2 id="fields-heading">Fields</h2>
        <KeyFields k={k} completerOn={completerOn} />
      </section>
      {mayAct && (recoverable || resumed) && (
        <section aria-labelledby="actions-heading" className="card">
          <h2 id="actions-heading">Actions</h2>
          {resumable && <ResumeNow tenantId={k.tenantId} keyName={k.key} resume={resume} />}
          {resumed && (
            <p role="status" className={resumed.ok ? "resume-result" : "error"} data-testid="resume-result">
              {resumed.message}
            </p>
          )}
          {recoverable && <RecoverLock tenantId={k.tenantId} keyName={k.key} stale={k.stale} />}
        </section>
      )}
      <section aria-labelledby="request-heading">
        <h2 id="request-heading">Request fingerprint inputs</h2>
        <p className="muted small">
          The canonical text the request hash is the SHA-256 of: the procedure path, a newline, the canonical JSON of the input.
        </p>
        {/* Focusable, as the docs' examples are: on a phone a long request scrolls sideways, and a keyboard must reach it. */}
        <pre data-testid="canonical-request" tabIndex={0}>
          {k.request}
        </pre>
      </section>
      <section aria-labelledby="response-heading">
        <h2 id="response-heading">Stored response</h2>
        <pre data-testid="stored-response" tabIndex={0}>
          {pretty(k.responseBody)}
        </pre>
      </section>
      <section aria-labelledby="timeline-heading">
        <h2 id="timeline-heading">Timeline</h2>
        <Timeline events={timeline} />
      </section>
      <section aria-labelledby="ledger-heading">
        <h2 id="ledger-heading">Ledger entries</h2>
        <LedgerEntries entries={ledger} labelledBy="ledger-heading" />
      </section>
      <section aria-labelledby="charges-heading">
        <h2 id="charges-heading">Provider charges</h2>
        <ProviderCharges payments={payments} />
      </section>
      <AuditLog tenantId={k.tenantId} keyName={k.key} />
    </>
  );
}
