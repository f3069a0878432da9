/**
 * The slice of the OpenAPI document the docs page reads: its operations in
 * document order, each with a stable anchor, its success answer and its
 * problem types. The document is the one source; nothing here restates it.
 */
export type JsonSchema = {
  type?: string | string[];
  format?: string;
  description?: string;
  title?: string;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  $ref?: string;
};

export type Parameter = {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  description?: string;
  schema: JsonSchema;
  example?: unknown;
};

type Media = { schema: JsonSchema; example?: unknown; examples?: Record<string, { value: unknown }> };

type Response = { description: string; content?: Record<string, Media> };

export type OperationObject = {
  operationId: string;
  summary: string;
  description?: string;
  security?: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { content: { "application/json": Media } };
  responses: Record<string, Response>;
};

export type ApiDocument = { paths: Record<string, Record<string, unknown>> };

export type Operation = { anchor: string; method: string; path: string; op: OperationObject };

/** Every operation, in the document's order; the anchor is its operationId, which the document keeps unique. */
export function operationsOf(doc: ApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods as Record<string, OperationObject>).map(([method, op]) => ({
      anchor: op.operationId,
      method: method.toUpperCase(),
      path,
      op,
    })),
  );
}

/** The first 2xx: what the operation answers when it does what it says. */
export function successOf(op: OperationObject): { status: string; media?: Media } {
  const status = Object.keys(op.responses).find((s) => s.startsWith("2")) ?? "200";
  return { status, media: op.responses[status]?.content?.["application/json"] };
}

/** The problem types each error status can carry, read from the examples the document keys by type. */
export function problemsByStatus(op: OperationObject): { status: string; slugs: string[] }[] {
  return Object.entries(op.responses)
    .map(([status, r]) => ({ status, slugs: Object.keys(r.content?.["application/problem+json"]?.examples ?? {}) }))
    .filter(({ slugs }) => slugs.length > 0);
}
