/**
 * Admin sign-in and sign-out over HTTP (`/admin/session`), with real status
 * codes: 403 from another origin or for anything but JSON, 429 with
 * Retry-After once throttled, 401 for a wrong password (after the same pause
 * every time, whatever was wrong), 200 with the session cookie otherwise.
 * Sign-out revokes the session server-side and clears the cookie.
 */
import { z } from "zod";
import { DomainError, publicProblem } from "../errors";
import { strictInput } from "../input";
import { readJsonBody } from "../rest/body";
import { problemResponse, send } from "../rest/respond";
import { checkAdminChange, checkSameOrigin, enforce } from "./origin";
import type { Db } from "../../db/client";
import { authenticate, DEMO_OPERATOR, OPERATOR_NAME } from "./operators";
import { ADMIN_COOKIE, adminEnabled, issueSession, revokeSessions, SESSION_TTL_MS, sessionTokens, type AdminSettings } from "./session";
import { clientAddress } from "../edge/client-address";
import type { SignInThrottle } from "./throttle";

/** Keeps every failure alike in timing, whether the password was wrong or sign-in is off. */
const FAILED_SIGN_IN_PAUSE_MS = 400;

const signInInput = strictInput({
  /** Left out: the demo operator, where it is the only one (operators.ts). */
  operator: z.string().regex(OPERATOR_NAME, "is not an operator name").optional(),
  password: z.string().min(1).max(1024),
  next: z.string().max(2048).optional(),
});

/** Only paths inside the admin area: an open redirect would let a link send a fresh admin anywhere. */
export function returnPath(value: string | undefined): string {
  return typeof value === "string" && /^\/admin(\/[^/\\]|$|\?)/.test(value) && !value.includes("//") ? value : "/admin";
}

/** httpOnly, SameSite=Lax, Secure on https, the whole site; `maxAge` 0 deletes it. */
function sessionCookie(value: string, secure: boolean, maxAgeSeconds: number): string {
  return `${ADMIN_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure ? "; Secure" : ""}`;
}

const isHttps = (req: Request) => req.headers.get("x-forwarded-proto") === "https" || new URL(req.url).protocol === "https:";

export async function signInRequest(
  req: Request,
  { db, settings, throttle }: { db: Db; settings: AdminSettings; throttle: SignInThrottle },
): Promise<Response> {
  try {
    // Sign-in changes admin state like any admin mutation: same origin, JSON.
    enforce(checkAdminChange(req.headers));
    const input = signInInput.parse((await readJsonBody(req)).value);
    const address = clientAddress(req.headers);
    // The operator's own waits apply to a sign-in that leaves the name out too: it means the demo operator.
    const named = input.operator ?? DEMO_OPERATOR;
    const verdict = await throttle.attempt(address, named);
    if (!verdict.allowed) {
      const retryAfter = verdict.retryAfterSeconds;
      return problemResponse(
        publicProblem(
          new DomainError("too-many-sign-ins", 429, `Too many sign-in attempts; try again in ${retryAfter} s.`, { retryAfter }),
        ),
      );
    }
    const operator = adminEnabled(settings) ? await authenticate(db, settings, input.operator, input.password) : undefined;
    if (!operator) {
      await throttle.failed(named);
      await new Promise((resolve) => setTimeout(resolve, FAILED_SIGN_IN_PAUSE_MS));
      return problemResponse(
        publicProblem(new DomainError("sign-in-failed", 401, "Sign-in failed. Check the operator name and password and try again.")),
      );
    }
    await throttle.succeeded(address, named);
    const { token } = await issueSession(db, settings, operator);
    const headers = new Headers({ "set-cookie": sessionCookie(token, isHttps(req), SESSION_TTL_MS / 1000) });
    return send(200, JSON.stringify({ next: returnPath(input.next) }), headers);
  } catch (error) {
    return problemResponse(publicProblem(error, { route: "admin sign-in" }));
  }
}

export async function signOutRequest(req: Request, db: Db, settings: AdminSettings): Promise<Response> {
  try {
    // No body to check: the origin is the whole rule.
    enforce(checkSameOrigin(req.headers));
    await revokeSessions(db, settings, sessionTokens(req.headers));
    return new Response(null, { status: 204, headers: { "cache-control": "no-store", "set-cookie": sessionCookie("", isHttps(req), 0) } });
  } catch (error) {
    return problemResponse(publicProblem(error, { route: "admin sign-out" }));
  }
}
