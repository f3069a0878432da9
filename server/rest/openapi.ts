/** The OpenAPI 3.1 document of the REST surface, generated from the registered procedures' schemas and meta. */
import { z } from "zod";
import type { RegisteredProcedure } from "../registry";
import { buildRoutes, type Route } from "./routes";

type JsonSchema = Record<string, unknown>;

const toSchema = (schema: unknown, io: "input" | "output"): JsonSchema => {
  if (!(schema instanceof z.ZodType)) return {};
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonSchema;
  return rest;
};

const problem = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
});

function operation(route: Route) {
  const input = toSchema(route.input, "input");
  const properties = { ...((input.properties as Record<string, JsonSchema>) ?? {}) };
  const required = new Set((input.required as string[]) ?? []);
  const parameters: unknown[] = route.params.map((name) => {
    delete properties[name];
    required.delete(name);
    return { name, in: "path", required: true, schema: { type: "string" } };
  });
  if (route.rest.method === "GET") {
    for (const [name, schema] of Object.entries(properties)) {
      parameters.push({ name, in: "query", required: required.has(name), schema });
    }
  }
  if (route.idempotent) {
    parameters.push({
      name: "Idempotency-Key",
      in: "header",
      required: true,
      description: "A unique value per logical operation (1–255 visible ASCII characters), reused on every retry of it.",
      schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7E]+$" },
    });
  }
  const status = String(route.rest.status ?? 200);
  const responses: Record<string, unknown> = {
    [status]: {
      description: route.idempotent ? "Success. A replay answers with the same status and bytes, plus `Idempotent-Replayed: true`." : "Success.",
      content: { "application/json": { schema: toSchema(route.output, "output") } },
    },
    "400": problem("Malformed request or Idempotency-Key; nothing was stored."),
    "401": problem("Missing or unknown API token."),
  };
  if (route.idempotent) {
    responses["409"] = problem("A request with this key is still in progress; retry after Retry-After.");
    responses["422"] = problem("This key was used for a different request.");
  }
  return {
    operationId: route.procedure,
    summary: route.rest.summary,
    tags: route.rest.tags,
    parameters,
    ...(route.rest.method === "POST"
      ? { requestBody: { required: true, content: { "application/json": { schema: { ...input, properties, required: [...required] } } } } }
      : {}),
    responses,
  };
}

export function openApiDocument(procedures: RegisteredProcedure[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of buildRoutes(procedures)) {
    (paths[route.rest.path] ??= {})[route.rest.method.toLowerCase()] = operation(route);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Exactly Once API",
      version: "1.0.0",
      description: "Payments and checkouts that are safe to retry. Every POST under /v1 (except webhooks) takes an Idempotency-Key.",
    },
    servers: [{ url: "/api" }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "A tenant API token (npm run tenant -- create <name>)." } },
      schemas: {
        Problem: {
          type: "object",
          description: "RFC 9457 problem details.",
          required: ["type", "title", "status", "detail"],
          properties: {
            type: { type: "string" },
            title: { type: "string" },
            status: { type: "integer" },
            detail: { type: "string" },
            errors: { type: "array", items: { type: "object", properties: { field: { type: "string" }, message: { type: "string" } } } },
          },
        },
      },
    },
  };
}
