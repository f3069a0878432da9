/**
 * What each profile expects where the conventions differ. The sources:
 * - ietf: draft-ietf-httpapi-idempotency-key-header (the key is an sf-string;
 *   400 for a missing key, 422 for a key reused with another payload, 409 for
 *   a request that arrives while the first is processed; a retry gets "the
 *   result of the previously completed operation, success or an error").
 * - stripe: Stripe's documented behaviour (docs.stripe.com/api/idempotent_requests):
 *   keys are optional and up to 255 characters, the status and body of the
 *   first execution are saved and returned again "including 500 errors",
 *   other parameters with the same key are an error (400, idempotency_error),
 *   a concurrent request is a 409.
 * - exactly-once: this project's external contract (docs/API.md and the
 *   idempotency table it was built from): the key is required,
 *   1–255 visible ASCII characters, its sf-string form names the same key,
 *   422 for another payload, 409 with Retry-After while running, replays
 *   marked `Idempotent-Replayed: true`, a 5xx is never stored as final, and
 *   errors are problem+json.
 */
import type { ProfileName } from "./types";

export type Profile = {
  name: ProfileName;
  /** How a key goes on the wire. */
  formatKey: (key: string) => string;
  /** The answer to a request without a key; undefined: a key is optional. */
  missingKeyStatus?: number;
  mismatchStatus: number;
  /** Key values the server must refuse with 400, each with why. */
  badKeys: { value: string; why: string }[];
  /** The bare and sf-string forms of a key must name one key. */
  quotedKeyIsSameKey: boolean;
  /** A replay carries this header (lower-case name, value). */
  replayMarker?: [string, string];
  /** A 5xx may be stored and replayed as the key's final answer. */
  storesServerErrors: boolean;
  /** A 409 for a request in flight carries Retry-After in whole seconds. */
  conflictRetryAfter: boolean;
  /** Error bodies (REST) are RFC 9457 problem+json; otherwise a JSON `error` object or a Link header suffices. */
  problemJson: boolean;
};

const sfString = (key: string) => `"${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
const tooLong = { value: "k".repeat(256), why: "256 characters (at most 255)" };

export const PROFILES: Record<ProfileName, Profile> = {
  ietf: {
    name: "ietf",
    formatKey: sfString,
    missingKeyStatus: 400,
    mismatchStatus: 422,
    badKeys: [{ value: '"unterminated', why: "not an sf-string (no closing quote)" }],
    quotedKeyIsSameKey: false,
    storesServerErrors: true,
    conflictRetryAfter: false,
    problemJson: false,
  },
  stripe: {
    name: "stripe",
    formatKey: (key) => key,
    mismatchStatus: 400,
    badKeys: [tooLong],
    quotedKeyIsSameKey: false,
    storesServerErrors: true,
    conflictRetryAfter: false,
    problemJson: false,
  },
  "exactly-once": {
    name: "exactly-once",
    formatKey: (key) => key,
    missingKeyStatus: 400,
    mismatchStatus: 422,
    badKeys: [tooLong, { value: "with space", why: "a space (only visible ASCII 0x21–0x7E)" }],
    quotedKeyIsSameKey: true,
    replayMarker: ["idempotent-replayed", "true"],
    storesServerErrors: false,
    conflictRetryAfter: true,
    problemJson: true,
  },
};

export { sfString };
