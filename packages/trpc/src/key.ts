/**
 * The `Idempotency-Key` header: 1–255 visible ASCII characters (0x21–0x7E),
 * sent bare (Stripe's form) or as an RFC 8941 structured-field string
 * (`"abc"`, as draft-ietf-httpapi-idempotency-key-header requires). Both forms
 * name the same key, so a client following either never gets two executions.
 */
import { parseItem } from "structured-headers";
import { IdempotencyKeyInvalidError, IdempotencyKeyMissingError } from "./errors.js";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
const VALID = /^[\x21-\x7E]{1,255}$/;

/** The string inside a structured-field string; anything else (a bare key) is taken as sent. */
function unquoted(value: string): string {
  if (!value.startsWith('"')) return value;
  try {
    const [item] = parseItem(value);
    return typeof item === "string" ? item : value;
  } catch {
    // Not a well-formed sf-string: a bare key that happens to start with a quote.
    return value;
  }
}

export function readIdempotencyKey(headers: Headers): string {
  const raw = headers.get(IDEMPOTENCY_KEY_HEADER);
  if (raw === null) throw new IdempotencyKeyMissingError();
  const value = unquoted(raw);
  if (!VALID.test(value)) throw new IdempotencyKeyInvalidError(value.length);
  return value;
}
