/**
 * The admin session of the request being rendered, read as every tRPC call
 * reads it (the context's `auth.adminSession`, from the cookie alone);
 * undefined when signed out.
 */
import { headers } from "next/headers";
import { app } from "@/server/app";

export async function currentAdmin() {
  const context = await app.createContextInner();
  return context.auth.adminSession(new Headers(await headers()));
}
