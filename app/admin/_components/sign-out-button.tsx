"use client";
/** Sign-out: revokes the session on the server (a copied cookie stops working too), then shows the sign-in form. */
import { useState } from "react";

export function SignOutButton() {
  const [pending, setPending] = useState(false);
  async function signOut() {
    setPending(true);
    await fetch("/admin/session", { method: "DELETE" }).catch(() => undefined);
    window.location.assign("/admin");
  }
  return (
    <button type="button" className="secondary" onClick={signOut} disabled={pending}>
      Sign out
    </button>
  );
}
