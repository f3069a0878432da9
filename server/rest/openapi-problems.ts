/**
 * The problem side of the OpenAPI document, from the problem type registry
 * (server/problems.ts): which types an operation can answer (those its kind
 * implies plus its meta's refusals), a schema per type, the responses per
 * status with the headers each one carries.
 */
import { z } from "zod";
import { PROBLEMS, problemTitle, problemType, type ProblemSlug } from "../problems";
import { HEADER } from "./respond";
import type { Route } from "./routes";

type JsonSchema = Record<string, unknown>;

/** What any request may meet before it reaches an operation (proxy.ts) or in it. */
export const EVERYWHERE: ProblemSlug[] = ["misdirected-request", "internal", "database-unavailable"];

/** Every type an operation can answer with. */
export function problemsOf(route: Route): ProblemSlug[] {
  const post = route.rest.method === "POST";
  return [
    "validation",
    "duplicate-key",
    ...(post ? (["invalid-json", "json-too-deep", "invalid-utf8", "body-too-large", "unsupported-media-type"] as const) : []),
    ...(route.idempotent
      ? ([
          "idempotency-key-missing",
          "idempotency-key-invalid",
          "idempotency-key-in-progress",
          "idempotency-lease-lost",
          "idempotency-key-mismatch",
          "too-many-requests",
          "key-quota-exceeded",
        ] as const)
      : []),
    route.rest.signed ? "invalid-signature" : "unauthorized",
    ...(route.params.length ? (["not-found"] as const) : []),
    ...(route.rest.refusals ?? []),
    ...EVERYWHERE,
  ];
}

export const problemSchemaName = (slug: ProblemSlug) => `Problem-${slug}`;

/** A type's body: the four standard members fixed to the registry's values, its extension members, nothing else. */
export function problemSchema(slug: ProblemSlug): JsonSchema {
  const spec = PROBLEMS[slug];
  const members = toJson(z.object("members" in spec ? spec.members : {}));
  return {
    type: "object",
    description: `${spec.about} See ${problemType(slug)}.`,
    required: ["type", "title", "status", "detail", ...((members.required as string[] | undefined) ?? [])],
    properties: {
      type: { const: problemType(slug), description: "The problem type; its URI is a page that explains it." },
      title: { const: problemTitle(slug) },
      status: { const: spec.status },
      detail: { type: "string", description: "What went wrong, for a person." },
      ...(members.properties as Record<string, JsonSchema> | undefined),
    },
    additionalProperties: false,
  };
}

export function toJson(schema: z.ZodType, io: "input" | "output" = "output"): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonSchema;
  return rest;
}

/** An example body of a type, with its extension members' own examples. */
function problemExample(slug: ProblemSlug): JsonSchema {
  const spec = PROBLEMS[slug];
  const members = (toJson(z.object("members" in spec ? spec.members : {})).properties ?? {}) as Record<string, { examples?: unknown[] }>;
  const extensions = Object.fromEntries(Object.entries(members).map(([name, s]) => [name, s.examples?.[0]]));
  return { type: problemType(slug), title: problemTitle(slug), status: spec.status, detail: spec.about, ...extensions };
}

const ref = (name: string, kind: "schemas" | "headers") => ({ $ref: `#/components/${kind}/${name}` });

/** Headers an answer of this status carries; `replayable`: a stored answer a retry with the key gets again. */
export function headersOf(status: number, replayable: boolean): Record<string, unknown> {
  return {
    [HEADER.cacheControl]: ref("Cache-Control", "headers"),
    ...(replayable ? { [HEADER.replayed]: ref("Idempotent-Replayed", "headers") } : {}),
    ...(status === 409 || status === 503 ? { [HEADER.retryAfter]: ref("Retry-After", "headers") } : {}),
    ...(status === 401 ? { [HEADER.wwwAuthenticate]: ref("WWW-Authenticate", "headers") } : {}),
  };
}

/** Statuses answered before a key is claimed, or not final for it: never replayed. */
const NEVER_STORED = new Set([409, 413, 415, 421, 500, 503]);

/**
 * The problem responses for `slugs`, by status. `idempotent`: a final refusal
 * after the key's claim is stored, and its replay says so.
 */
export function problemResponses(slugs: ProblemSlug[], idempotent = false): Record<string, unknown> {
  const byStatus = new Map<number, ProblemSlug[]>();
  for (const slug of slugs) byStatus.set(PROBLEMS[slug].status, [...(byStatus.get(PROBLEMS[slug].status) ?? []), slug]);
  return Object.fromEntries(
    [...byStatus].map(([status, types]) => {
      const schemas = types.map((slug) => ref(problemSchemaName(slug), "schemas"));
      return [
        String(status),
        {
          description: types.map((slug) => `\`${problemType(slug)}\``).join(", "),
          headers: headersOf(status, idempotent && !NEVER_STORED.has(status)),
          content: {
            "application/problem+json": {
              schema: schemas.length === 1 ? schemas[0] : { oneOf: schemas },
              examples: Object.fromEntries(types.map((slug) => [slug, { value: problemExample(slug) }])),
            },
          },
        },
      ];
    }),
  );
}
