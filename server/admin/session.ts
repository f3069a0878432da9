/**
 * The admin session: one shared password (ADMIN_PASSWORD) and a signed,
 * self-contained cookie. No session table: the cookie carries its own expiry
 * inside the HMAC-signed payload, so a copied cookie dies after 8 hours and a
 * tampered one never verifies.
 *
 * The signing key is ADMIN_SESSION_SECRET, or when that is unset a key
 * derived from ADMIN_PASSWORD with HKDF: restarts keep sessions, and changing
 * the password signs everyone out. Neither value is ever logged.
 */
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";
import { env } from "../env";

export const ADMIN_COOKIE = "eo_admin";
export const SESSION_TTL_MS = 8 * 60 * 60 * 1000;
const VERSION = "v1";

/** `id` tells sign-ins apart in the audit log; it identifies a session, not a person. */
export type AdminSession = { id: string; issuedAt: number; expiresAt: number };

/** Whether sign-in is possible at all (development and tests may run without a password). */
export const adminEnabled = () => env.ADMIN_PASSWORD !== undefined;

function signingKey(): Buffer | undefined {
  if (env.ADMIN_SESSION_SECRET) return Buffer.from(env.ADMIN_SESSION_SECRET, "utf8");
  if (!env.ADMIN_PASSWORD) return undefined;
  return Buffer.from(hkdfSync("sha256", env.ADMIN_PASSWORD, "exactly-once", "admin-session-signing-key", 32));
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

/** Constant time whatever the lengths: both sides are hashed to 32 bytes first. */
export function passwordMatches(candidate: string): boolean {
  const expected = env.ADMIN_PASSWORD;
  if (expected === undefined) return false;
  return timingSafeEqual(sha256(candidate), sha256(expected));
}

const mac = (key: Buffer, data: string) => createHmac("sha256", key).update(data, "utf8").digest("base64url");

/** A new session token: `v1.<payload>.<signature>`, the payload holding issue and expiry times. */
export function issueSession(now = Date.now()): { token: string; session: AdminSession } {
  const key = signingKey();
  if (!key) throw new Error("Admin sign-in is not configured (ADMIN_PASSWORD is unset).");
  const session = { id: randomBytes(8).toString("hex"), issuedAt: now, expiresAt: now + SESSION_TTL_MS };
  const payload = Buffer.from(JSON.stringify({ sid: session.id, iat: session.issuedAt, exp: session.expiresAt })).toString("base64url");
  const body = `${VERSION}.${payload}`;
  return { token: `${body}.${mac(key, body)}`, session };
}

/** The session a token proves, or undefined for anything unsigned, tampered, malformed or expired. */
export function verifySession(token: string | undefined, now = Date.now()): AdminSession | undefined {
  const key = signingKey();
  if (!key || !token) return undefined;
  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== VERSION) return undefined;
  const [version, payload, signature] = parts as [string, string, string];
  const expected = Buffer.from(mac(key, `${version}.${payload}`));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { sid?: unknown; iat?: unknown; exp?: unknown };
    if (typeof claims.sid !== "string" || typeof claims.iat !== "number" || typeof claims.exp !== "number") return undefined;
    if (claims.exp <= now) return undefined;
    return { id: claims.sid, issuedAt: claims.iat, expiresAt: claims.exp };
  } catch {
    return undefined;
  }
}

/** The value of one cookie in a `Cookie` header. */
export function readCookie(header: string | null, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    // Tokens are base64url and dots: nothing to decode.
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The admin session of a request, from its `Cookie` header only (an Authorization header is ignored). */
export const sessionFromHeaders = (headers: Headers) => verifySession(readCookie(headers.get("cookie"), ADMIN_COOKIE));

/** Cookie attributes: httpOnly, SameSite=Lax, Secure on https, the whole site, gone when the session ends. */
export function cookieOptions(session: AdminSession, secure: boolean) {
  return { httpOnly: true, sameSite: "lax" as const, secure, path: "/", expires: new Date(session.expiresAt) };
}
