/**
 * The OpenAPI 3.1 document of the REST surface, generated from what the API
 * enforces: each registered procedure's zod schemas and `meta.rest`, the
 * problem type registry, the header names the middleware and this layer
 * use. Nothing here restates a rule; a rule changed in its one place changes
 * the document too.
 */
import { z } from "zod";
import { IDEMPOTENCY_ATTEMPT_HEADER, IDEMPOTENCY_KEY_HEADER } from "@exactly-once/trpc";
import type { RegisteredProcedure } from "../registry";
import { SIGNATURE_HEADER } from "../webhooks/signature";
import { EXAMPLES } from "./examples";
import { healthSchema } from "./health";
import { EVERYWHERE, headersOf, problemResponses, problemSchema, problemSchemaName, problemsOf, toJson } from "./openapi-problems";
import { buildRoutes, type Route } from "./routes";

type JsonSchema = Record<string, unknown>;

const inputSchema = (route: Route): JsonSchema => (route.input instanceof z.ZodType ? toJson(route.input, "input") : {});

/** The input's fields minus the path's, as one object schema. */
function fieldsOf(route: Route) {
  const input = inputSchema(route);
  const {
    properties = {},
    required = [],
    ...rest
  } = input as { properties?: Record<string, JsonSchema>; required?: string[] } & JsonSchema;
  const paramSchemas = Object.fromEntries(route.params.map((name) => [name, properties[name] ?? { type: "string" }]));
  const fields = Object.fromEntries(Object.entries(properties).filter(([name]) => !route.params.includes(name)));
  return { rest, fields, required: required.filter((name) => !route.params.includes(name)), paramSchemas };
}

const without = (example: Record<string, unknown> | undefined, names: string[]) =>
  example && Object.fromEntries(Object.entries(example).filter(([name]) => !names.includes(name)));

function parameters(route: Route): unknown[] {
  const { rest, fields, required, paramSchemas } = fieldsOf(route);
  const example = EXAMPLES[route.procedure]?.request;
  const list: unknown[] = route.params.map((name) => ({
    name,
    in: "path",
    required: true,
    schema: paramSchemas[name],
    example: example?.[name],
  }));
  if (route.rest.method === "GET" && Object.keys(fields).length) {
    if (rest.oneOf) {
      // Exactly one of several query parameters: one exploded object, the only way OpenAPI can say it.
      list.push({
        name: "filter",
        in: "query",
        required: true,
        style: "form",
        explode: true,
        schema: { type: "object", properties: fields, ...rest },
        example: without(example, route.params),
      });
    } else {
      for (const [name, schema] of Object.entries(fields))
        list.push({ name, in: "query", required: required.includes(name), schema, example: example?.[name] });
    }
  }
  if (route.idempotent) {
    list.push({
      name: IDEMPOTENCY_KEY_HEADER,
      in: "header",
      required: true,
      description:
        'A unique value per logical operation, sent again on every retry of it: 1–255 visible ASCII characters, bare (`abc`) or as a structured-field string (`"abc"`), both the same key. A client may add `' +
        IDEMPOTENCY_ATTEMPT_HEADER +
        ": 1` on its first send of a key (2, 3, … on retries): an operation done in one transaction then runs without looking for a stored answer first. It never changes an answer.",
      schema: { type: "string", minLength: 1, maxLength: 257, pattern: "^[\\x21-\\x7E]+$" },
      example: "5f0c1e58-8d8e-4f7c-9a51-2b9d3c1f7a10",
    });
  }
  return list;
}

function requestBody(route: Route) {
  const { rest, fields, required } = fieldsOf(route);
  const { description, ...shape } = rest;
  const schema = {
    ...shape,
    type: "object",
    properties: fields,
    ...(required.length ? { required } : {}),
    ...(description ? { description } : {}),
  };
  return {
    // An action such as capture takes no fields: an empty body is `{}`.
    required: required.length > 0,
    content: { "application/json": { schema, example: without(EXAMPLES[route.procedure]?.request, route.params) ?? {} } },
  };
}

function operation(route: Route) {
  const status = String(route.rest.status ?? 200);
  return {
    operationId: route.procedure.replace(".", "_"),
    summary: route.rest.summary,
    description: route.idempotent
      ? "Idempotent: the first request with a key runs once; the same request again gets the stored answer, byte for byte, with `Idempotent-Replayed: true`."
      : undefined,
    tags: route.rest.tags,
    ...(route.rest.signed ? { security: [{ pspSignature: [] }] } : {}),
    parameters: parameters(route),
    ...(route.rest.method === "POST" ? { requestBody: requestBody(route) } : {}),
    responses: {
      [status]: {
        description: route.rest.summary,
        headers: headersOf(Number(status), route.idempotent),
        content: { "application/json": { schema: toJson(route.output as z.ZodType), example: EXAMPLES[route.procedure]?.response } },
      },
      ...problemResponses(problemsOf(route), route.idempotent),
    },
  };
}

const health = {
  get: {
    operationId: "health",
    summary: "Liveness and the database's reachability",
    tags: ["health"],
    security: [],
    responses: {
      ...problemResponses(["misdirected-request"]),
      ...Object.fromEntries(
        (
          [
            ["200", "The app and its database answer."],
            ["503", "Starting, or the database is away."],
          ] as const
        ).map(([status, description]) => [
          status,
          {
            description,
            headers: headersOf(Number(status), false),
            content: {
              "application/json": {
                schema: toJson(healthSchema),
                example: status === "200" ? { status: "ok", database: "up" } : { status: "degraded", database: "down" },
              },
            },
          },
        ]),
      ),
    },
  },
};

const header = (description: string, schema: JsonSchema, required = true) => ({ description, required, schema });

export function openApiDocument(procedures: RegisteredProcedure[]) {
  const routes = buildRoutes(procedures);
  const paths: Record<string, Record<string, unknown>> = { "/health": health };
  for (const route of routes) (paths[route.rest.path] ??= {})[route.rest.method.toLowerCase()] = operation(route);
  const used = [...new Set([...EVERYWHERE, ...routes.flatMap(problemsOf)])].sort();
  return {
    openapi: "3.1.0",
    info: {
      title: "Exactly Once API",
      version: "1.0.0",
      description:
        "Payments and checkouts that are safe to retry. Every POST under /v1 except the webhook takes an Idempotency-Key. Errors are RFC 9457 problem details; each `type` is a page under /docs. A method a path does not serve is a `405` with `Allow`.",
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: "/api" }],
    security: [{ bearer: [] }],
    tags: [...new Set(["health", ...routes.flatMap((r) => r.rest.tags)])].map((name) => ({ name, description: `The ${name} operations.` })),
    paths,
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "A tenant's API token (`npm run --silent tenant -- create <name>`)." },
        pspSignature: {
          type: "apiKey",
          in: "header",
          name: SIGNATURE_HEADER,
          description: "The provider's signature: the hex HMAC-SHA256 of the raw body with PSP_WEBHOOK_SECRET.",
        },
      },
      headers: {
        "Idempotent-Replayed": header(
          `\`true\` on an answer replayed for its ${IDEMPOTENCY_KEY_HEADER}: the stored status and bytes of the first.`,
          { type: "string", enum: ["true"] },
          false,
        ),
        "Retry-After": header("Whole seconds to wait before retrying with the same key.", { type: "integer", minimum: 1 }),
        "WWW-Authenticate": header("The credential this operation takes (RFC 9110).", { type: "string" }),
        "Cache-Control": header("Answers are never cached.", { type: "string", const: "no-store" }),
      },
      schemas: Object.fromEntries(used.map((slug) => [problemSchemaName(slug), problemSchema(slug)])),
    },
  };
}
