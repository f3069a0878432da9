/**
 * What each profile expects where the conventions differ. The sources:
 * - core (the default): the common ground, what the test plan of the seed
 *   articles asks of any Idempotency-Key API and nothing more: a replay gets
 *   the stored answer, another payload under a used key is refused (any
 *   4xx), a duplicate in flight is refused (a 409-like 4xx) or gets the
 *   stored answer, one execution under a burst, keys apart per credential,
 *   an expired key runs anew. Not judged: body formats, key syntax, a
 *   replay marker; a request without a key is reported (refused or run).
 * - ietf: draft-ietf-httpapi-idempotency-key-header (the key is an sf-string;
 *   400 for a missing key, 422 for a key reused with another payload, 409 for
 *   a request that arrives while the first is processed; a retry gets "the
 *   result of the previously completed operation, success or an error"). A
 *   5xx whose effect is unknown is no completed operation: read so, storing
 *   and replaying one is a deviation here.
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
import type { ProfileName } from "./types.js";

export type Profile = {
  name: ProfileName;
  /** How a key goes on the wire. */
  formatKey: (key: string) => string;
  /** A request without a key: refused with this status, "optional" (it simply runs; not checked), or "reported" (either, said which). */
  missingKey: number | "optional" | "reported";
  /** The refusal of another payload under a used key; undefined: any 4xx. */
  mismatchStatus?: number;
  /** Key values the server must refuse with 400, each with why; none: key syntax is not judged. */
  badKeys: { value: string; why: string }[];
  /** The bare and sf-string forms of a key must name one key. */
  quotedKeyIsSameKey: boolean;
  /** A replay carries this header (lower-case name, value). */
  replayMarker?: [string, string];
  /** A 5xx may be stored and replayed as the key's final answer (else storing one is a deviation). */
  storesServerErrors: boolean;
  /** The refusal of a duplicate while the first runs; undefined: any 4xx. */
  conflictStatus?: number;
  /** That refusal carries Retry-After in whole seconds. */
  conflictRetryAfter: boolean;
  /** How error bodies (REST) are judged: RFC 9457 problem+json, any of problem+json / a JSON `error` object / a Link header, or not at all. */
  errorBodies: "problem+json" | "documented" | "any";
};

export const sfString = (key: string) => `"${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
const tooLong = { value: "k".repeat(256), why: "256 characters (at most 255)" };

export const PROFILES: Record<ProfileName, Profile> = {
  core: {
    name: "core",
    formatKey: (key) => key,
    missingKey: "reported",
    badKeys: [],
    quotedKeyIsSameKey: false,
    storesServerErrors: true,
    conflictRetryAfter: false,
    errorBodies: "any",
  },
  ietf: {
    name: "ietf",
    conflictStatus: 409,
    formatKey: sfString,
    missingKey: 400,
    mismatchStatus: 422,
    badKeys: [{ value: '"unterminated', why: "not an sf-string (no closing quote)" }],
    quotedKeyIsSameKey: false,
    storesServerErrors: false,
    conflictRetryAfter: false,
    errorBodies: "documented",
  },
  stripe: {
    name: "stripe",
    conflictStatus: 409,
    formatKey: (key) => key,
    missingKey: "optional",
    mismatchStatus: 400,
    badKeys: [tooLong],
    quotedKeyIsSameKey: false,
    storesServerErrors: true,
    conflictRetryAfter: false,
    errorBodies: "documented",
  },
  "exactly-once": {
    name: "exactly-once",
    conflictStatus: 409,
    formatKey: (key) => key,
    missingKey: 400,
    mismatchStatus: 422,
    badKeys: [tooLong, { value: "with space", why: "a space (only visible ASCII 0x21–0x7E)" }],
    quotedKeyIsSameKey: true,
    replayMarker: ["idempotent-replayed", "true"],
    storesServerErrors: false,
    conflictRetryAfter: true,
    errorBodies: "problem+json",
  },
};
