/**
 * What the tRPC endpoint adds to a response's headers: what the middleware
 * decided (Idempotent-Replayed), and a 409's Retry-After (whole seconds until
 * the holder's lease runs out), as REST sends them, so the checkout's link can
 * honour it. Nothing it answers is cacheable: every answer is one caller's
 * data (`no-store`, as REST sends).
 */
import type { TRPCError } from "@trpc/server";
import type { Context } from "@/server/context";
import { toProblem } from "@/server/errors";

export function responseMeta({ ctx, errors }: { ctx?: Context; errors: TRPCError[] }) {
  const headers = new Headers(ctx?.response.headers);
  headers.set("cache-control", "no-store");
  const retryAfter = errors.map((error) => toProblem(error).retryAfter).find((seconds) => typeof seconds === "number");
  if (retryAfter !== undefined) headers.set("Retry-After", String(retryAfter));
  return { headers };
}
