/** /admin/keys/{tenantId}/{key}: one idempotency key in full, behind the admin sign-in. */
import { OperatorRole } from "@/server/admin/operators";
import { app } from "@/server/app";
import { currentAdmin } from "../../../_lib/current-admin";
import { KeyDetailView } from "../../../_components/key-detail";
import { AdminSignIn } from "../../../_components/admin-sign-in";
import { SignOutButton } from "../../../_components/sign-out-button";
import { keyHref } from "../../../_components/format";

export const dynamic = "force-dynamic";

/** Next.js hands dynamic segments over still percent-encoded; keys may contain "/", "%", "?" and "#". */
function segment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export default async function KeyPage({ params }: { params: Promise<{ tenantId: string; key: string }> }) {
  const raw = await params;
  const tenantId = segment(raw.tenantId);
  const key = segment(raw.key);
  const admin = await currentAdmin();
  if (!admin) return <AdminSignIn returnTo={keyHref(tenantId, key)} />;
  return (
    <div className="stack admin">
      <nav aria-label="Breadcrumb" className="small">
        <a href="/admin">Idempotency keys</a> / <span className="mono">{tenantId}</span>
      </nav>
      <div className="admin-head">
        <h1 className="key-title">
          Key <code>{key}</code>
        </h1>
        <SignOutButton />
      </div>
      <KeyDetailView
        tenantId={tenantId}
        keyName={key}
        completerOn={app.settings.COMPLETER_INTERVAL_MS > 0}
        mayAct={admin.operator.role !== OperatorRole.Viewer}
      />
    </div>
  );
}
