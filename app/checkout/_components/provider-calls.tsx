/**
 * The calls this server made to the payment provider for one payment: a
 * flaky provider's failed first call shows here, before the retry (with the
 * same provider key) that charged.
 */
import type { ChargeAttempt } from "@/server/payments/charge-attempts";

function describe(call: ChargeAttempt): string {
  if (call.status === null) return `no answer (${call.error ?? "network error"}): retried with the same provider key`;
  if (call.status >= 500) return `${call.status}: the provider failed; retried with the same provider key`;
  if (call.status === 402) return "402: the card was declined";
  if (call.replayed) return `${call.status}: answered from the provider's own record of this key, no new charge`;
  if (call.status < 300) return `${call.status}: charged`;
  return `${call.status}: refused by the provider`;
}

export function ProviderCalls({ calls }: { calls: ChargeAttempt[] }) {
  if (calls.length === 0) return null;
  return (
    <section aria-labelledby="provider-calls-heading" className="card">
      <h2 id="provider-calls-heading">Calls to the payment provider</h2>
      <ol aria-label="Provider calls" className="small">
        {calls.map((call, i) => (
          <li key={i}>
            {describe(call)} <span className="muted">({call.ms} ms)</span>
          </li>
        ))}
      </ol>
    </section>
  );
}
