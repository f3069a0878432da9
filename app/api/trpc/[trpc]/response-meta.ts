/**
 * What the tRPC endpoint adds to a response's headers: the headers of what
 * the middleware decided (Idempotent-Replayed on a replay; a 409's
 * Retry-After, whole seconds until the holder's lease runs out), as REST
 * sends them, so the checkout's link can honour them. Nothing it answers is
 * cacheable: every answer is one caller's data (`no-store`, as REST sends).
 */
import { outcomeHeaders } from "@exactly-once/trpc";
import type { TRPCError } from "@trpc/server";
import type { Context } from "@/server/context";
import { toProblem } from "@/server/errors";

export function responseMeta({ ctx, errors }: { ctx?: Context; errors: TRPCError[] }) {
  const headers = new Headers(outcomeHeaders(ctx));
  headers.set("cache-control", "no-store");
  // The app's own refusals (a tenant over its budget, the database away) say when to come back in their problem.
  const retryAfter = errors.map((error) => toProblem(error).retryAfter).find((seconds) => typeof seconds === "number");
  if (retryAfter !== undefined && !headers.has("Retry-After")) headers.set("Retry-After", String(retryAfter));
  return { headers };
}
