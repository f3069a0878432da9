/**
 * The `Idempotency-Key` header: one key of 1–255 visible ASCII characters
 * (0x21–0x7E), sent bare (Stripe's form) or as an RFC 8941 structured-field
 * string (`"abc"`, as draft-ietf-httpapi-idempotency-key-header requires).
 * Both forms name the same key, so a client following either never gets two
 * executions.
 *
 * A value that starts with `"` or `(` is read as a structured field, and must
 * then be exactly one sf-string without parameters: the draft allows no
 * parameters, so `"k";a=1` and `"k";a=2` are refused rather than both taken
 * for `k`, and a list (`"a", "b"`), an inner list or a malformed string is
 * refused rather than guessed at. Any other value is a bare key, taken as
 * sent (`a"b` included).
 */
import { parseList } from "structured-headers";
import { IdempotencyKeyInvalidError, IdempotencyKeyMissingError } from "./errors.js";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
const VALID = /^[\x21-\x7E]{1,255}$/;

const NOT_ONE_STRING = 'must be one structured-field string without parameters ("abc"), or a bare key (abc)';

/** The string inside a structured-field string, or why the value is not one. */
function structured(value: string): { key: string } | { refused: string } {
  let members: ReturnType<typeof parseList>;
  try {
    members = parseList(value);
  } catch {
    return { refused: NOT_ONE_STRING };
  }
  if (members.length !== 1) return { refused: "must name one key, not a list" };
  const [item, parameters] = members[0]!;
  if (typeof item !== "string") return { refused: NOT_ONE_STRING };
  if (parameters.size > 0) return { refused: "must not carry structured-field parameters" };
  return { key: item };
}

/**
 * `Idempotency-Attempt`: the client's count of its sends of this key, 1 for
 * the first (what gRPC's `grpc-previous-rpc-attempts` and the AWS SDKs'
 * `amz-sdk-request: attempt=1` tell a server). It changes what a request
 * costs, never how it is answered: `1` says nothing can be stored under the
 * key yet, so neither flavour looks for a stored answer first: the atomic
 * one runs the handler, the recoverable one sends its claim alone. A client
 * that says so wrongly (a reused key, a proxy that sends a request twice)
 * costs itself an atomic handler run that the key row's unique index rolls
 * back, or a recoverable claim that finds the row, before the stored answer
 * is replayed; nothing runs twice. Any other value, or none, keeps the
 * look; like a preference a server does not act on (RFC 7240), a value it
 * does not read is not refused.
 */
export const IDEMPOTENCY_ATTEMPT_HEADER = "Idempotency-Attempt";

/** The client says this is its first send of the key (`Idempotency-Attempt: 1`). */
export const isFirstSend = (headers: Headers): boolean => headers.get(IDEMPOTENCY_ATTEMPT_HEADER) === "1";

export function readIdempotencyKey(headers: Headers): string {
  const raw = headers.get(IDEMPOTENCY_KEY_HEADER);
  if (raw === null) throw new IdempotencyKeyMissingError();
  const read = /^["(]/.test(raw) ? structured(raw) : { key: raw };
  if ("refused" in read) throw new IdempotencyKeyInvalidError(raw.length, read.refused);
  if (!VALID.test(read.key)) throw new IdempotencyKeyInvalidError(read.key.length);
  return read.key;
}
