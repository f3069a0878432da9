/**
 * The problem type registry (RFC 9457): every `type` this app answers with,
 * its status, title and extension members, in one place. Domain errors can
 * name only a type listed here, with its status (the compiler checks both);
 * the OpenAPI document and the pages under /docs/problems are generated from it.
 */
import { z } from "zod";

export type Problem = {
  type: string;
  title: string;
  status: number;
  detail: string;
  /** For 400s: which fields were wrong and why. */
  errors?: { field: string; message: string }[];
  [extension: string]: unknown;
};

export const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  421: "Misdirected Request",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
};

/** Extension members, one schema each: the catalogue below names them, the OpenAPI document declares them. */
const member = {
  errors: z.array(z.object({ field: z.string(), message: z.string() })).meta({
    description: "The fields that were wrong, each with why (a dotted path, or `(body)`, `(path)`).",
    examples: [[{ field: "amount", message: "must be at most 1000000.00" }]],
  }),
  id: z.string().meta({ description: "The id that named nothing this tenant can see.", examples: ["pay_01JD6Y4M2Q8ZK3"] }),
  paymentId: z.string().meta({ description: "The payment concerned.", examples: ["pay_01JD6Y4M2Q8ZK3"] }),
  orderId: z.string().meta({ description: "The order concerned.", examples: ["ord_01JD6Y6B9T"] }),
  paymentStatus: z.string().meta({ description: "The payment's status when the action was refused.", examples: ["requires_capture"] }),
  reason: z.string().meta({ description: "The provider's reason.", examples: ["card_declined"] }),
  balance: z.string().meta({ description: "The account's balance, a decimal string.", examples: ["15.00"] }),
  retryAfter: z
    .number()
    .int()
    .min(1)
    .meta({ description: "Seconds to wait before retrying with the same key; also sent as `Retry-After`.", examples: [1] }),
  requestId: z
    .uuid()
    .meta({ description: "The id under which the server logged the cause.", examples: ["4b0c2a4e-3f1d-4c36-9d2e-6f5e1a2b3c4d"] }),
  tenantId: z.string().meta({ examples: ["ten_01JD6Y"] }),
  key: z.string().meta({ examples: ["5f0c1e58-8d8e-4f7c-9a51-2b9d3c1f7a10"] }),
};

type ProblemSpec = {
  status: number;
  /** What the type means, for the document and its page under /docs. */
  about: string;
  members?: z.core.$ZodLooseShape;
  /** The RFC 9110 challenge a 401 of this type sends in WWW-Authenticate. */
  challenge?: string;
};

export const PROBLEMS = {
  validation: {
    status: 400,
    about:
      "The request does not match the operation's schema: an unknown field, a missing or malformed one, text with NUL or invalid UTF-8, a field the path already gives, a malformed path.",
    members: { errors: member.errors },
  },
  "invalid-json": { status: 400, about: "The request body is not JSON.", members: { errors: member.errors } },
  "duplicate-key": {
    status: 400,
    about: "The JSON body (or the query string) names one field twice; the API does not pick one of them.",
    members: { errors: member.errors },
  },
  "json-too-deep": {
    status: 400,
    about: "The JSON body nests arrays and objects more than 64 levels deep; refused in one pass over the text, before it is parsed.",
    members: { errors: member.errors },
  },
  "invalid-utf8": {
    status: 400,
    about: "The request body is not valid UTF-8; `errors` names the fields the bad bytes fall in.",
    members: { errors: member.errors },
  },
  "idempotency-key-missing": { status: 400, about: "The POST needs an `Idempotency-Key` header." },
  "idempotency-key-invalid": { status: 400, about: "The `Idempotency-Key` is not 1–255 visible ASCII characters (0x21–0x7E)." },
  unauthorized: { status: 401, about: "No API token, or one this server does not know.", challenge: 'Bearer realm="exactly-once"' },
  "invalid-signature": {
    status: 401,
    about: "The webhook's `Psp-Signature` is not the HMAC-SHA256 of its body.",
    challenge: 'Psp-Signature realm="webhooks"',
  },
  "sign-in-failed": { status: 401, about: "An operator's sign-in to the admin failed (not part of /api/v1)." },
  "payment-declined": {
    status: 402,
    about: "The provider declined the payment (or the order's payment). A decided outcome: stored for the key and replayed.",
    members: { reason: member.reason, paymentId: member.paymentId, orderId: member.orderId.optional() },
  },
  "forbidden-origin": { status: 403, about: "An admin change from another origin (not part of /api/v1)." },
  "forbidden-role": { status: 403, about: "The operator's role may only read (not part of /api/v1)." },
  "not-found": {
    status: 404,
    about: "No such record for this tenant (another tenant's id answers the same), or no such endpoint.",
    members: { id: member.id.optional() },
  },
  "storefront-off": { status: 404, about: "The storefront is off on this server (not part of /api/v1)." },
  "method-not-allowed": { status: 405, about: "The path exists, but not with this method; `Allow` lists the methods it has." },
  "misdirected-request": { status: 421, about: "The request's Host is not one this server answers for (`ALLOWED_HOSTS`)." },
  "idempotency-key-in-progress": {
    status: 409,
    about: "A request with this key is still running; retry with the same key after `Retry-After` seconds.",
    members: { retryAfter: member.retryAfter },
  },
  "idempotency-lease-lost": {
    status: 409,
    about: "This attempt lost its key to a newer one; retry to get that attempt's result.",
    members: { retryAfter: member.retryAfter },
  },
  "key-busy": {
    status: 409,
    about: "An operator action on a key a request is working on (not part of /api/v1).",
    members: { tenantId: member.tenantId, key: member.key },
  },
  "lab-calls-used-up": {
    status: 422,
    about: "The failure lab's naive run has sent every checkout its scenario needs (not part of /api/v1).",
  },
  "lab-no-payment": { status: 409, about: "The failure lab's run has no payment yet (not part of /api/v1)." },
  "body-too-large": { status: 413, about: "The request body is over 64 KiB; refused while it is read, before any parsing." },
  "batch-too-long": { status: 413, about: "A tRPC batch with too many calls (not part of /api/v1)." },
  "unsupported-media-type": { status: 415, about: "A POST whose Content-Type is not `application/json`." },
  "idempotency-key-mismatch": {
    status: 422,
    about: "This key was first used for a different request (another path, or a body that is not equivalent JSON); nothing ran.",
  },
  "insufficient-funds": { status: 422, about: "The withdrawal would take the balance below zero.", members: { balance: member.balance } },
  "currency-mismatch": { status: 422, about: "The amount's currency is not the account's.", members: { errors: member.errors } },
  "refund-exceeds-captured": {
    status: 422,
    about: "Refunds would add up to more than the captured amount.",
    members: { errors: member.errors },
  },
  "payment-not-refundable": {
    status: 422,
    about: "Only a captured (succeeded) payment can be refunded.",
    members: { paymentId: member.paymentId },
  },
  "payment-captured": {
    status: 422,
    about: "The payment is already captured: it cannot be voided (or captured again).",
    members: { paymentId: member.paymentId, paymentStatus: member.paymentStatus },
  },
  "payment-canceled": {
    status: 422,
    about: "The payment is voided: it cannot be captured (or voided again).",
    members: { paymentId: member.paymentId, paymentStatus: member.paymentStatus },
  },
  "payment-not-authorized": {
    status: 422,
    about: "Only an authorized payment (`requires_capture`) can be captured or voided.",
    members: { paymentId: member.paymentId, paymentStatus: member.paymentStatus },
  },
  "provider-refused": {
    status: 422,
    about:
      "The provider refused the charge, capture, void or refund for a reason other than a decline; stored and replayed like a decline.",
    members: { reason: member.reason },
  },
  "coupon-redeemed": { status: 422, about: "The order names a coupon that was already used.", members: { errors: member.errors } },
  "coupon-unknown": { status: 422, about: "The order names a coupon that does not exist.", members: { errors: member.errors } },
  "coupon-exists": { status: 422, about: "A coupon with this code exists already.", members: { errors: member.errors } },
  "mixed-currencies": { status: 422, about: "An order's items are priced in more than one currency." },
  "key-not-recoverable": {
    status: 422,
    about: "Only an in-progress key can be recovered (not part of /api/v1).",
    members: { tenantId: member.tenantId, key: member.key },
  },
  "key-not-resumable": {
    status: 422,
    about: "The key cannot be resumed by the server (not part of /api/v1).",
    members: { tenantId: member.tenantId, key: member.key },
  },
  "too-many-requests": {
    status: 429,
    about:
      "The tenant has used its budget of consequential requests for this minute (TENANT_REQUESTS_PER_MINUTE), or, on the storefront, the client address its budget of anonymous checkouts (STOREFRONT_REQUESTS_PER_MINUTE); retry after `Retry-After` with the same Idempotency-Key: nothing was claimed.",
    members: { retryAfter: member.retryAfter },
  },
  "key-quota-exceeded": {
    status: 429,
    about:
      "The tenant holds as many unexpired idempotency keys as it may (TENANT_MAX_LIVE_KEYS); new keys are taken again once old ones expire, while a retry of a key it holds still gets its stored answer. Nothing was claimed.",
    members: { retryAfter: member.retryAfter },
  },
  "too-many-sign-ins": { status: 429, about: "Too many admin sign-ins (not part of /api/v1).", members: { retryAfter: member.retryAfter } },
  "too-many-lab-runs": {
    status: 429,
    about: "Too many failure-lab runs (not part of /api/v1).",
    members: { retryAfter: member.retryAfter },
  },
  internal: {
    status: 500,
    about: "An unexpected failure. Nothing about its cause is shown; the server logged it under `requestId`.",
    members: { requestId: member.requestId },
  },
  "lab-refund-failed": { status: 502, about: "The failure lab's refund was not made by the provider (not part of /api/v1)." },
  "upstream-unavailable": {
    status: 503,
    about: "The provider did not answer, so the outcome is unknown; retry with the same key to finish it.",
    members: { retryAfter: member.retryAfter },
  },
  "database-unavailable": {
    status: 503,
    about: "The database is away; nothing was decided, retry with the same key.",
    members: { retryAfter: member.retryAfter },
  },
} as const satisfies Record<string, ProblemSpec>;

export type ProblemSlug = keyof typeof PROBLEMS;
/** The slugs whose status is `S`. */
export type ProblemSlugOf<S extends number> = { [K in ProblemSlug]: (typeof PROBLEMS)[K]["status"] extends S ? K : never }[ProblemSlug];

export const isProblemSlug = (slug: string): slug is ProblemSlug => Object.hasOwn(PROBLEMS, slug);

/**
 * The types' URIs. Clients match on them and stored refusals are replayed
 * byte for byte, so a type never moves; each one dereferences to its page
 * (a permanent redirect, app/problems/[slug]/route.ts).
 */
export const PROBLEM_TYPE_BASE = "/problems/";

export const problemType = (slug: ProblemSlug) => `${PROBLEM_TYPE_BASE}${slug}`;

/** The page that explains a type, with the rest of the docs. */
export const problemPage = (slug: ProblemSlug) => `/docs/problems/${slug}`;

/** The registry's entry for a problem's `type`, if it is one of this app's. */
export function problemSpec(type: string): ProblemSpec | undefined {
  const slug = type.slice(PROBLEM_TYPE_BASE.length);
  return type.startsWith(PROBLEM_TYPE_BASE) && isProblemSlug(slug) ? PROBLEMS[slug] : undefined;
}

export const problemTitle = (slug: ProblemSlug) => TITLES[PROBLEMS[slug].status] ?? "Error";

/** The problem of a type, with the standard members from the registry. */
export const problemOf = (slug: ProblemSlug, detail: string, extensions: Record<string, unknown> = {}): Problem =>
  // Extensions first: they may add members, never replace the standard ones.
  ({ ...extensions, type: problemType(slug), title: problemTitle(slug), status: PROBLEMS[slug].status, detail });
