"use client";
/**
 * The admin sign-in form. It posts JSON to /admin/session, so a form on
 * another page cannot imitate it, and shows the server's answer: a generic
 * failure, or how long to wait once sign-in is throttled.
 */
import { useState, type FormEvent } from "react";

type Problem = { detail?: string };

/**
 * `demo`: the server runs in demo mode; `nameOptional`: the demo operator is
 * the only one, so the name may be left out (once an operator is added, it
 * may not: the hint says to sign in as `demo`).
 */
export function SignInForm({
  returnTo,
  enabled,
  demo = false,
  nameOptional = false,
}: {
  returnTo: string;
  enabled: boolean;
  demo?: boolean;
  nameOptional?: boolean;
}) {
  const [error, setError] = useState<string>();
  const [pending, setPending] = useState(false);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const password = form.get("password");
    // Left out when empty: the demo operator, where it is the only one.
    const operator = String(form.get("operator") ?? "").trim() || undefined;
    setPending(true);
    setError(undefined);
    try {
      const res = await fetch("/admin/session", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ operator, password, next: returnTo }),
      });
      if (res.ok) {
        const { next } = (await res.json()) as { next: string };
        // A full load: the server renders the dashboard with the new cookie.
        window.location.assign(next);
        return;
      }
      const problem = (await res.json().catch(() => ({}))) as Problem;
      setError(
        res.status === 429 && problem.detail ? problem.detail : "Sign-in failed. Check the operator name and password and try again.",
      );
    } catch {
      setError("Sign-in failed: the server did not answer. Try again.");
    }
    setPending(false);
  }

  return (
    <section className="card sign-in" aria-labelledby="sign-in-heading">
      <h1 id="sign-in-heading">Admin sign-in</h1>
      <p className="muted">The dashboard of idempotency keys is for operators. Sign in with your operator name and password.</p>
      {demo && (
        <p className="notice" role="note">
          {nameOptional
            ? "Demo mode: this server has one demo operator with the demo password, documented in the README under “The admin dashboard”; leave the operator name empty."
            : "Demo mode: sign in as the operator “demo” with the demo password (the README, under “The admin dashboard”), or as an operator added to this server."}
        </p>
      )}
      {!enabled && (
        <p className="notice" role="note">
          Admin sign-in is disabled: this server was started without <code>ADMIN_PASSWORD</code>.
        </p>
      )}
      <form onSubmit={submit} className="form-stack">
        <label htmlFor="admin-operator">Operator</label>
        <input
          id="admin-operator"
          name="operator"
          type="text"
          autoComplete="username"
          autoCapitalize="none"
          spellCheck={false}
          required={!nameOptional}
        />
        <label htmlFor="admin-password">Password</label>
        <input
          id="admin-password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          aria-describedby={error ? "sign-in-error" : undefined}
        />
        {error && (
          <p id="sign-in-error" className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={pending}>
          {pending ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </section>
  );
}
