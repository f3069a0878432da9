"use client";
/** The admin sign-in form; the server action answers with a generic error or a redirect. */
import { useActionState } from "react";
import { signIn, type SignInState } from "../actions";

export function SignInForm({ returnTo, enabled }: { returnTo: string; enabled: boolean }) {
  const [state, action, pending] = useActionState<SignInState, FormData>(signIn, {});
  return (
    <section className="card sign-in" aria-labelledby="sign-in-heading">
      <h1 id="sign-in-heading">Admin sign-in</h1>
      <p className="muted">The dashboard of idempotency keys is for operators. Sign in with the admin password.</p>
      {!enabled && (
        <p className="notice" role="note">
          Admin sign-in is disabled: this server was started without <code>ADMIN_PASSWORD</code>.
        </p>
      )}
      <form action={action} className="form-stack">
        <input type="hidden" name="next" value={returnTo} />
        <label htmlFor="admin-password">Password</label>
        <input id="admin-password" name="password" type="password" autoComplete="current-password" required aria-describedby={state.error ? "sign-in-error" : undefined} />
        {state.error && (
          <p id="sign-in-error" className="error" role="alert">
            {state.error}
          </p>
        )}
        <button type="submit" disabled={pending}>
          {pending ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </section>
  );
}
