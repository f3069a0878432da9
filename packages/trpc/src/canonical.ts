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
  constructor(
    readonly path: string,
    what: string,
  ) {
    super(`Cannot fingerprint ${what} at ${path || "the input"}`);
  }
}

/**
 * How deep a fingerprinted input may nest. Far deeper than any procedure's
 * input; it keeps the walk (which recurses) cheap and its stack short, so an
 * input nobody validated cannot make hashing it the expensive part.
 */
export const MAX_FINGERPRINT_DEPTH = 64;

export function canonicalJson(value: unknown): string {
  return write(value, []);
}

/**
 * `at` is the path to `value`, one shared stack pushed and popped on the way
 * down: the walk stays linear in the input's size, and the dotted path is
 * spelled out only for the error that names it.
 */
function write(value: unknown, at: (string | number)[]): string {
  const refuse = (what: string) => new NotCanonicalizableError(at.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join(""), what);
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw refuse(String(value));
      return JSON.stringify(Object.is(value, -0) ? 0 : value);
    case "string":
      return JSON.stringify(value.normalize("NFC"));
    case "object":
      break;
    default:
      throw refuse(`a ${typeof value}`);
  }
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (at.length >= MAX_FINGERPRINT_DEPTH) throw refuse(`a value nested more than ${MAX_FINGERPRINT_DEPTH} levels deep`);
  if (Array.isArray(value)) {
    const items = value.map((item, i) => {
      if (item === undefined) return "null";
      at.push(i);
      const text = write(item, at);
      at.pop();
      return text;
    });
    return `[${items.join(",")}]`;
  }
  const entries: [string, unknown][] = [];
  const seen = new Set<string>();
  for (const [rawKey, item] of Object.entries(value)) {
    if (item === undefined) continue;
    const key = rawKey.normalize("NFC");
    // Two keys that differ only in normalisation would silently merge.
    if (seen.has(key)) throw refuse(`two keys that normalise to "${key}"`);
    seen.add(key);
    entries.push([key, item]);
  }
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const members = entries.map(([k, v]) => {
    at.push(k);
    const text = `${JSON.stringify(k)}:${write(v, at)}`;
    at.pop();
    return text;
  });
  return `{${members.join(",")}}`;
}

export type Fingerprint = { request: string; hash: string };

export function fingerprint(procedure: string, input: unknown): Fingerprint {
  const request = `${procedure}\n${canonicalJson(input === undefined ? null : input)}`;
  return { request, hash: createHash("sha256").update(request, "utf8").digest("hex") };
}
