/**
 * Operator passwords as scrypt hashes (memory-hard, so a stolen table is
 * slow to guess from), apart from the accounts so that a tool that only
 * hashes (the e2e suite making a viewer) needs no server settings.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from "node:crypto";

/** OWASP's floor for scrypt (N=2^17, r=8, p=1): 128 MiB per hash, about a tenth of a second. */
const SCRYPT = { N: 2 ** 17, r: 8, p: 1, keyLength: 32 } as const;
const scryptOptions = (N: number, r: number, p: number): ScryptOptions => ({ N, r, p, maxmem: 256 * N * r });

const scrypt = (password: string, salt: Buffer, keyLength: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) =>
    scryptCallback(password, salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key))),
  );

/** `scrypt$N$r$p$salt$hash`, the parameters kept beside the hash so they can grow later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, SCRYPT.keyLength, scryptOptions(SCRYPT.N, SCRYPT.r, SCRYPT.p));
  return ["scrypt", SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

export async function passwordMatchesHash(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64url");
  const key = await scrypt(password, Buffer.from(salt, "base64url"), expected.length, scryptOptions(Number(n), Number(r), Number(p)));
  return timingSafeEqual(key, expected);
}
