/**
 * /admin: the sign-in form for anyone without a valid admin session (and
 * nothing else: no counts, no keys), the dashboard of idempotency keys for
 * everyone with one.
 */
import { Suspense } from "react";
import { OperatorRole } from "@/server/admin/operators";
import { app } from "@/server/app";
import { currentAdmin } from "./_lib/current-admin";
import { KeysDashboard } from "./_components/keys-dashboard";
import { OwnSessions } from "./_components/own-sessions";
import { AdminSignIn } from "./_components/admin-sign-in";
import { SignOutButton } from "./_components/sign-out-button";

export const dynamic = "force-dynamic";

type SearchParams = Record<string, string | string[] | undefined>;

/** The dashboard URL with its filters, so signing in lands on the view that was asked for. */
function dashboardPath(params: SearchParams): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) for (const v of [value ?? []].flat()) query.append(name, v);
  const text = query.toString();
  return text ? `/admin?${text}` : "/admin";
}

export default async function AdminPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const admin = await currentAdmin();
  if (!admin) return <AdminSignIn returnTo={dashboardPath(await searchParams)} />;
  const { operator } = admin;
  return (
    <div className="stack admin">
      <div className="admin-head">
        <h1>Idempotency keys</h1>
        <p className="muted">
          Signed in as <strong>{operator.name}</strong> (
          {operator.role === OperatorRole.Viewer ? "viewer: reads only" : "operator: may resume, release and purge"}
          {operator.demo ? ", the demo operator" : ""})
        </p>
        <SignOutButton />
      </div>
      <p className="muted">
        Every tenant&rsquo;s keys with their state, request hash, lease and expiry. Refreshes every 5 seconds; the filters live in the
        address.
      </p>
      {/* The dashboard reads the filters from the URL, which needs a Suspense boundary. */}
      <Suspense fallback={<p className="muted">Loading the dashboard…</p>}>
        <KeysDashboard sweepMs={app.settings.IDEMPOTENCY_SWEEP_MS} mayAct={operator.role !== OperatorRole.Viewer} />
      </Suspense>
      <OwnSessions />
    </div>
  );
}
