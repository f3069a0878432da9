/** HTTP answers in this app's shape: JSON or problem+json, never cached, `Retry-After` where a retry should wait. */
import { problemBody, type Problem } from "../errors";

const JSON_TYPE = "application/json";
const PROBLEM_TYPE = "application/problem+json";

export function send(status: number, body: string, headers: Headers): Response {
  if (!headers.has("content-type")) headers.set("content-type", status >= 400 ? PROBLEM_TYPE : JSON_TYPE);
  if (status === 409 && !headers.has("retry-after")) headers.set("retry-after", "1");
  headers.set("cache-control", "no-store");
  return new Response(body, { status, headers });
}

export function problemResponse(p: Problem, headers = new Headers()): Response {
  if (typeof p.retryAfter === "number") headers.set("retry-after", String(p.retryAfter));
  return send(p.status, problemBody(p), headers);
}
