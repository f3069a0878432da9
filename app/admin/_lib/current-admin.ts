/**
 * The admin session of the request being rendered, from its cookie alone as
 * adminProcedure reads it; undefined when signed out. React's `cache` makes
 * it one read per request, however many of the page's parts ask.
 */
import { headers } from "next/headers";
import { cache } from "react";
import { app } from "@/server/app";

export const currentAdmin = cache(async () => app.adminSession(await headers()));
