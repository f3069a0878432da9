/**
 * A JSON schema as rows a person reads: one per field, nested objects and
 * array items flattened into dotted names (`items[].sku`), each with a short
 * type, whether it is required, and its description and rules. An enum of
 * more than a handful of values is not spelled out in its row: the row
 * names the list, which the page prints once.
 */
import { successOf, type JsonSchema, type OperationObject, type Parameter } from "./operations";

/** Up to this many values an enum is shown inline; past it, once in a list of its own. */
const INLINE_ENUM = 8;

export type LongEnum = { id: string; title: string; values: string[] };

/** `sharedId`: the row's description is printed once, at this anchor, since many operations repeat it. */
export type FieldRow = {
  name: string;
  in?: string;
  type: string;
  required: boolean;
  description?: string;
  rules: string[];
  longEnum?: LongEnum;
  sharedId?: string;
};

const code = (value: unknown) => `\`${JSON.stringify(value)}\``;

/** A schema that may be null, as the schema without the null and a flag. */
function unwrapNullable(schema: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants?.length === 2 && variants.some((v) => v.type === "null"))
    return { schema: variants.find((v) => v.type !== "null") ?? {}, nullable: true };
  if (Array.isArray(schema.type) && schema.type.includes("null")) {
    const rest = schema.type.filter((t) => t !== "null");
    return { schema: { ...schema, type: rest.length === 1 ? rest[0] : rest }, nullable: true };
  }
  return { schema, nullable: false };
}

function typeOf(schema: JsonSchema): string {
  if (schema.const !== undefined) return "constant";
  if (schema.type === "array") return `array of ${typeOf(schema.items ?? {})}`;
  const type = Array.isArray(schema.type)
    ? schema.type.join(" or ")
    : (schema.type ?? (schema.anyOf || schema.oneOf ? "one of several" : "any"));
  return schema.format ? `${type} (${schema.format})` : type;
}

function longEnumOf(schema: JsonSchema, name: string): LongEnum | undefined {
  if (!schema.enum || schema.enum.length <= INLINE_ENUM) return undefined;
  const title = schema.title ?? name;
  return { id: `values-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`, title, values: schema.enum.map(String) };
}

/**
 * What the schema allows beyond its type, in words. Bounds and patterns only
 * where no description says them better (a regex is the last resort), and
 * no pattern beside a format that names it.
 */
function rulesOf(schema: JsonSchema): string[] {
  const rules: string[] = [];
  if (schema.const !== undefined) rules.push(`Always ${code(schema.const)}.`);
  if (schema.enum && schema.enum.length <= INLINE_ENUM) rules.push(`One of ${schema.enum.map(code).join(", ")}.`);
  if (!schema.description) {
    if (schema.minimum !== undefined || schema.maximum !== undefined)
      rules.push(`From ${schema.minimum ?? "−∞"} to ${schema.maximum ?? "∞"}.`);
    if (schema.minLength !== undefined || schema.maxLength !== undefined)
      rules.push(`${schema.minLength ?? 0}–${schema.maxLength ?? "∞"} characters.`);
    if (schema.pattern && !schema.format) rules.push(`Matches \`${schema.pattern}\`.`);
  }
  if (schema.default !== undefined) rules.push(`Default ${code(schema.default)}.`);
  return rules;
}

/** The rows of an object schema's properties, nested ones under their parent's name. */
export function fieldRows(object: JsonSchema, prefix = ""): FieldRow[] {
  const required = new Set(object.required ?? []);
  return Object.entries(object.properties ?? {}).flatMap(([key, raw]) => {
    const name = `${prefix}${key}`;
    const { schema, nullable } = unwrapNullable(raw);
    const longEnum = longEnumOf(schema, key);
    const row: FieldRow = {
      name,
      type: `${typeOf(schema)}${nullable ? " or null" : ""}`,
      required: required.has(key),
      description: schema.description ?? raw.description,
      rules: rulesOf(schema),
      longEnum,
    };
    const nested = schema.type === "array" ? schema.items : schema;
    const children = nested?.properties ? fieldRows(nested, `${name}${schema.type === "array" ? "[]" : ""}.`) : [];
    return [row, ...children];
  });
}

/** The anchor a shared parameter's description is printed at. */
export const sharedAnchorOf = (p: Parameter) => `parameter-${p.in}-${p.name.toLowerCase()}`;

/** Parameters that several operations take with the same description (the Idempotency-Key): said once, not per operation. */
export function sharedParameters(lists: Parameter[][]): Parameter[] {
  const seen = new Map<string, { parameter: Parameter; count: number }>();
  for (const p of lists.flat()) {
    if (!p.description) continue;
    const key = `${p.in}:${p.name}:${p.description}`;
    seen.set(key, { parameter: p, count: (seen.get(key)?.count ?? 0) + 1 });
  }
  return [...seen.values()].filter(({ count }) => count > 1).map(({ parameter }) => parameter);
}

/** The rows of an operation's parameters; an exploded object parameter (a query of exactly one of several) as its fields. */
export function parameterRows(parameters: Parameter[], shared: Parameter[] = []): FieldRow[] {
  return parameters.flatMap((p) => {
    if (p.schema.properties) {
      const note = p.schema.description ? [p.schema.description] : [];
      return fieldRows(p.schema).map((row, i) => ({ ...row, in: p.in, rules: i === 0 ? [...note, ...row.rules] : row.rules }));
    }
    const longEnum = longEnumOf(p.schema, p.name);
    const description = p.description ?? p.schema.description;
    const sharedId = shared.some((q) => q.in === p.in && q.name === p.name && q.description === p.description)
      ? sharedAnchorOf(p)
      : undefined;
    return [
      {
        name: p.name,
        in: p.in,
        type: typeOf(p.schema),
        required: p.required,
        description,
        rules: rulesOf({ ...p.schema, description }),
        longEnum,
        sharedId,
      },
    ];
  });
}

/** What an operation takes (its parameters, then its body's fields) and what its success answer gives. */
export function operationRows(op: OperationObject, shared: Parameter[] = []): { takes: FieldRow[]; gives: FieldRow[] } {
  const body = fieldRows(op.requestBody?.content["application/json"].schema ?? {}).map((row) => ({ ...row, in: "body" }));
  return { takes: [...parameterRows(op.parameters ?? [], shared), ...body], gives: fieldRows(successOf(op).media?.schema ?? {}) };
}

/** Every long enum the rows name, once each. */
export function longEnumsOf(rows: FieldRow[]): LongEnum[] {
  return [...new Map(rows.flatMap((r) => (r.longEnum ? [[r.longEnum.id, r.longEnum] as const] : []))).values()];
}
