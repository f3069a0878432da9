/** API tokens: random, shown once, stored as SHA-256. */
import { createHash, randomBytes } from "node:crypto";

const PREFIX = "eo_";

export function newToken(): string {
  return PREFIX + randomBytes(32).toString("base64url");
}

export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** Parses `Authorization: Bearer <token>`; anything else is no token. */
export function bearerToken(headers: Headers): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.get("authorization") ?? "");
  return match?.[1];
}
