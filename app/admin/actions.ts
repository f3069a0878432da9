"use server";
/**
 * Sign-in and sign-out as server actions, so the password and the cookie
 * never pass through client code. A failed sign-in says only that it failed,
 * after the same pause every time, whatever was wrong.
 */
import { cookies, headers } from "next/headers";
import { redirect } from "next/navigation";
import { ADMIN_COOKIE, adminEnabled, cookieOptions, issueSession, passwordMatches } from "@/server/admin/session";

export type SignInState = { error?: string };

/** Slows guessing a little and keeps every failure alike; nothing fancier is needed for one shared password. */
const FAILED_SIGN_IN_PAUSE_MS = 400;

/** Only paths inside the admin area: an open redirect would let a link send a fresh admin anywhere. */
function returnPath(value: FormDataEntryValue | null): string {
  return typeof value === "string" && /^\/admin(\/[^/\\]|$|\?)/.test(value) && !value.includes("//") ? value : "/admin";
}

export async function signIn(_previous: SignInState, form: FormData): Promise<SignInState> {
  const password = form.get("password");
  if (!adminEnabled() || typeof password !== "string" || !passwordMatches(password)) {
    await new Promise((resolve) => setTimeout(resolve, FAILED_SIGN_IN_PAUSE_MS));
    return { error: "Sign-in failed. Check the password and try again." };
  }
  const { token, session } = issueSession();
  const secure = (await headers()).get("x-forwarded-proto") === "https";
  (await cookies()).set(ADMIN_COOKIE, token, cookieOptions(session, secure));
  redirect(returnPath(form.get("next")));
}

export async function signOut(): Promise<void> {
  (await cookies()).delete({ name: ADMIN_COOKIE, path: "/" });
  redirect("/admin");
}
