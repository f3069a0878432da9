/** The `Idempotency-Key` header: 1–255 visible ASCII characters (0x21–0x7E). */
import { IdempotencyKeyInvalidError, IdempotencyKeyMissingError } from "./errors";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
const VALID = /^[\x21-\x7E]{1,255}$/;

export function readIdempotencyKey(headers: Headers): string {
  const value = headers.get(IDEMPOTENCY_KEY_HEADER);
  if (value === null) throw new IdempotencyKeyMissingError();
  if (!VALID.test(value)) throw new IdempotencyKeyInvalidError(value.length);
  return value;
}
