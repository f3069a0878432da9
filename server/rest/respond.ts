/**
 * HTTP answers in this app's shape: JSON or problem+json, never cached,
 * `Retry-After` where a retry should wait, and on a 401 the challenge its
 * problem type names (`WWW-Authenticate`, which RFC 9110 requires there).
 */
import { problemBody, type Problem } from "../errors";
import { REPLAYED_HEADER } from "@exactly-once/trpc";
import { problemSpec } from "../problems";

/** The response headers this layer sets, by the names the document declares them under. */
export const HEADER = {
  retryAfter: "Retry-After",
  wwwAuthenticate: "WWW-Authenticate",
  allow: "Allow",
  cacheControl: "Cache-Control",
  replayed: REPLAYED_HEADER,
} as const;

const JSON_TYPE = "application/json";
const PROBLEM_TYPE = "application/problem+json";

export function send(status: number, body: string, headers: Headers): Response {
  if (!headers.has("content-type")) headers.set("content-type", status >= 400 ? PROBLEM_TYPE : JSON_TYPE);
  if (status === 409 && !headers.has(HEADER.retryAfter)) headers.set(HEADER.retryAfter, "1");
  headers.set(HEADER.cacheControl, "no-store");
  return new Response(body, { status, headers });
}

export function problemResponse(p: Problem, headers = new Headers()): Response {
  if (typeof p.retryAfter === "number") headers.set(HEADER.retryAfter, String(p.retryAfter));
  const challenge = problemSpec(p.type)?.challenge;
  if (challenge) headers.set(HEADER.wwwAuthenticate, challenge);
  return send(p.status, problemBody(p), headers);
}
