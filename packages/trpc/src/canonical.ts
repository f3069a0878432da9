/**
 * The request fingerprint: SHA-256 over a canonical text of the procedure path
 * and its validated input, so that equivalent requests hash alike and
 * different ones never do.
 *
 * Canonical form (pinned; changing it changes every stored fingerprint):
 * - the text is `<procedure path>\n<canonical JSON of the input>`;
 * - canonical JSON follows RFC 8785 (JCS) where JSON allows a choice:
 *   object keys sorted by UTF-16 code units, no whitespace, numbers in
 *   ECMAScript's shortest round-trip form (`1.0` and `1` are one number,
 *   `-0` is `0`), strings escaped as `JSON.stringify` does;
 * - unlike JCS, every string and key is first normalised to Unicode NFC, so
 *   "é" typed as one code point or as e + combining accent is one request;
 * - properties whose value is `undefined` are left out (as JSON does); `Date`
 *   becomes its ISO text; NaN, Infinity, bigint, functions and symbols are not
 *   JSON and are refused.
 */
import { createHash } from "node:crypto";

export class NotCanonicalizableError extends Error {
  override readonly name = "NotCanonicalizableError";
  constructor(readonly path: string, what: string) {
    super(`Cannot fingerprint ${what} at ${path || "the input"}`);
  }
}

export function canonicalJson(value: unknown): string {
  return write(value, "");
}

function write(value: unknown, path: string): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new NotCanonicalizableError(path, String(value));
      return JSON.stringify(Object.is(value, -0) ? 0 : value);
    case "string":
      return JSON.stringify(value.normalize("NFC"));
    case "object":
      break;
    default:
      throw new NotCanonicalizableError(path, `a ${typeof value}`);
  }
  if (Array.isArray(value)) {
    return `[${value.map((item, i) => (item === undefined ? "null" : write(item, `${path}[${i}]`))).join(",")}]`;
  }
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  const entries: [string, unknown][] = [];
  const seen = new Set<string>();
  for (const [rawKey, item] of Object.entries(value)) {
    if (item === undefined) continue;
    const key = rawKey.normalize("NFC");
    // Two keys that differ only in normalisation would silently merge.
    if (seen.has(key)) throw new NotCanonicalizableError(path, `two keys that normalise to "${key}"`);
    seen.add(key);
    entries.push([key, item]);
  }
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${write(v, `${path}.${k}`)}`).join(",")}}`;
}

export type Fingerprint = { request: string; hash: string };

export function fingerprint(procedure: string, input: unknown): Fingerprint {
  const request = `${procedure}\n${canonicalJson(input === undefined ? null : input)}`;
  return { request, hash: createHash("sha256").update(request, "utf8").digest("hex") };
}
