/**
 * The sign-in form as the server stands: whether admin sign-in is on, demo
 * mode, and whether the operator name may be left out (only while the demo
 * operator is the only one; operators.ts decides, as it does at sign-in).
 */
import { app } from "@/server/app";
import { SignInForm } from "./sign-in-form";

export async function AdminSignIn({ returnTo }: { returnTo: string }) {
  return <SignInForm returnTo={returnTo} {...await app.signInForm()} />;
}
