/** Resource ids: a type prefix and 20 random base62 characters (~119 bits). */
import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export function newId(prefix: string): string {
  let out = "";
  // 248 is the largest multiple of 62 below 256: rejecting above it keeps every character equally likely.
  while (out.length < 20) {
    for (const byte of randomBytes(32)) {
      if (byte < 248 && out.length < 20) out += ALPHABET[byte % 62];
    }
  }
  return `${prefix}_${out}`;
}
