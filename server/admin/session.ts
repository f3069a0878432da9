/**
 * The admin session: an operator's sign-in (operators.ts), a signed cookie
 * and a row in `admin_sessions` naming the operator. The cookie carries the session id and its
 * expiry inside an HMAC-signed payload, so a tampered one never verifies and
 * a copied one dies after 8 hours; the row is what makes it count, so
 * sign-out (which deletes the row) ends it at once, on every instance.
 *
 * The signing key is ADMIN_SESSION_SECRET, or when that is unset a key
 * derived from ADMIN_PASSWORD with HKDF: restarts keep sessions, and changing
 * the password signs everyone out. Neither value is ever logged.
 */
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";
import { and, desc, eq, gt, inArray, lte, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { adminSessions } from "../../db/schema";
import type { Env } from "../env-schema";
import { operatorNamed, type Operator } from "./operators";

export const ADMIN_COOKIE = "eo_admin";
export const SESSION_TTL_MS = 8 * 60 * 60 * 1000;
const VERSION = "v1";

/** `id` tells one operator's sign-ins apart; `operator` is who signed in, as the database has them now. */
export type AdminSession = { id: string; issuedAt: number; expiresAt: number; operator: Operator };
type SignedClaims = Omit<AdminSession, "operator">;

/** What the signing key comes from, and whether the demo operator may sign in (operators.ts). */
export type AdminSettings = Pick<Env, "ADMIN_SESSION_SECRET" | "ADMIN_PASSWORD" | "DEMO_MODE">;

/** Whether sign-in is possible at all (development and tests may run without a password). */
export const adminEnabled = (settings: AdminSettings) => signingKey(settings) !== undefined;

function signingKey(settings: AdminSettings): Buffer | undefined {
  if (settings.ADMIN_SESSION_SECRET) return Buffer.from(settings.ADMIN_SESSION_SECRET, "utf8");
  if (!settings.ADMIN_PASSWORD) return undefined;
  return Buffer.from(hkdfSync("sha256", settings.ADMIN_PASSWORD, "exactly-once", "admin-session-signing-key", 32));
}

const mac = (key: Buffer, data: string) => createHmac("sha256", key).update(data, "utf8").digest("base64url");

/** A new session token, `v1.<payload>.<signature>`, and its row; expired rows are cleared on the way. */
export async function issueSession(
  db: Db,
  settings: AdminSettings,
  operator: Operator,
  now = Date.now(),
): Promise<{ token: string; session: AdminSession }> {
  const key = signingKey(settings);
  if (!key) throw new Error("Admin sign-in is not configured (ADMIN_PASSWORD is unset).");
  const session = { id: randomBytes(16).toString("hex"), issuedAt: now, expiresAt: now + SESSION_TTL_MS, operator };
  await db.delete(adminSessions).where(lte(adminSessions.expiresAt, sql`now()`));
  await db
    .insert(adminSessions)
    .values({ id: session.id, operator: operator.name, createdAt: new Date(now), expiresAt: new Date(session.expiresAt) });
  const payload = Buffer.from(JSON.stringify({ sid: session.id, iat: session.issuedAt, exp: session.expiresAt })).toString("base64url");
  const body = `${VERSION}.${payload}`;
  return { token: `${body}.${mac(key, body)}`, session };
}

/** What a token's signature proves, or undefined for anything unsigned, tampered, malformed or expired. */
function signedClaims(settings: AdminSettings, token: string | undefined, now: number): SignedClaims | undefined {
  const key = signingKey(settings);
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

/** The session a token proves and that is still signed in, or undefined. */
export async function verifySession(
  db: Db,
  settings: AdminSettings,
  token: string | undefined,
  now = Date.now(),
): Promise<AdminSession | undefined> {
  const claims = signedClaims(settings, token, now);
  if (!claims) return undefined;
  const [row] = await db
    .select({ operator: adminSessions.operator })
    .from(adminSessions)
    .where(and(eq(adminSessions.id, claims.id), gt(adminSessions.expiresAt, sql`now()`)));
  // The role is read afresh on every request: a changed role or a removed operator counts at once.
  const operator = row?.operator ? await operatorNamed(db, settings, row.operator) : undefined;
  return operator ? { ...claims, operator } : undefined;
}

export type SessionSummary = { id: string; createdAt: string; expiresAt: string; current: boolean };

/** An operator's own sessions still signed in, newest first. */
export async function sessionsOf(db: Db, session: AdminSession): Promise<SessionSummary[]> {
  const rows = await db
    .select({ id: adminSessions.id, createdAt: adminSessions.createdAt, expiresAt: adminSessions.expiresAt })
    .from(adminSessions)
    .where(and(eq(adminSessions.operator, session.operator.name), gt(adminSessions.expiresAt, sql`now()`)))
    .orderBy(desc(adminSessions.createdAt));
  return rows.map((r) => ({
    id: r.id,
    createdAt: r.createdAt.toISOString(),
    expiresAt: r.expiresAt.toISOString(),
    current: r.id === session.id,
  }));
}

/** Ends one of the operator's own sessions; another operator's id matches nothing. */
export async function revokeOwnSession(db: Db, session: AdminSession, id: string): Promise<boolean> {
  const rows = await db
    .delete(adminSessions)
    .where(and(eq(adminSessions.id, id), eq(adminSessions.operator, session.operator.name)))
    .returning({ id: adminSessions.id });
  return rows.length > 0;
}

/**
 * Signs sessions out everywhere: each cookie, wherever it was copied, no longer
 * counts. Every token given is tried, not only the first: a request can carry
 * the cookie more than once (a junk one first), and skipping the one that
 * verifies would answer "signed out" while that session goes on working.
 */
export async function revokeSessions(db: Db, settings: AdminSettings, tokens: readonly string[]): Promise<void> {
  const now = Date.now();
  const ids = tokens.flatMap((token) => signedClaims(settings, token, now)?.id ?? []);
  if (ids.length > 0) await db.delete(adminSessions).where(inArray(adminSessions.id, ids));
}

/** Every value of one cookie in a `Cookie` header, in the order sent. */
export function readCookies(header: string | null, name: string): string[] {
  if (!header) return [];
  return header.split(";").flatMap((part) => {
    const eq = part.indexOf("=");
    // Tokens are base64url and dots: nothing to decode.
    return eq > 0 && part.slice(0, eq).trim() === name ? [part.slice(eq + 1).trim()] : [];
  });
}

/** The admin session of a request, from its `Cookie` header only (an Authorization header is ignored). */
export const sessionFromHeaders = (db: Db, settings: AdminSettings, headers: Headers) => verifySession(db, settings, sessionToken(headers));

/** The raw session cookie of a request: the first one, which is the one a request is signed in by. */
export const sessionToken = (headers: Headers): string | undefined => sessionTokens(headers)[0];

/** Every session cookie of a request (sign-out revokes them all). */
export const sessionTokens = (headers: Headers) => readCookies(headers.get("cookie"), ADMIN_COOKIE);
