/** The admin session of the request being rendered, from its cookie; undefined when signed out. */
import { cookies } from "next/headers";
import { database } from "@/db/client";
import { ADMIN_COOKIE, verifySession } from "@/server/admin/session";

export async function currentAdmin() {
  return verifySession(database().db, (await cookies()).get(ADMIN_COOKIE)?.value);
}
