/**
 * Strict client input, one definition for tRPC and REST alike: every input
 * object refuses fields it does not know (a misspelt `"captur": false` must
 * not silently charge at once), and no text may carry a NUL or a lone UTF-16
 * surrogate (what invalid UTF-8 becomes once decoded), which PostgreSQL
 * would refuse with an internal error. Both are 400s that name the field,
 * raised by the input schema, so before any idempotency key is claimed.
 *
 * The provider's webhook is the one exception: it is verified by its
 * signature and tolerates fields it does not know (see webhooks/psp.schema.ts).
 */
import { z } from "zod";

/** Why a piece of text cannot be accepted, or undefined when it can. */
export function textDefect(text: string): string | undefined {
  if (text.includes("\u0000")) return "must not contain a NUL character";
  // With the u flag a surrogate pair is one code point, so this matches lone surrogates only.
  if (/\p{Surrogate}/u.test(text)) return "must be valid UTF-8 text";
  return undefined;
}

export type Defect = { path: (string | number)[]; message: string };

/** Every string and object key in `value` that `check` objects to, with its path. */
export function findText(value: unknown, check: (text: string) => string | undefined, path: (string | number)[] = []): Defect[] {
  if (typeof value === "string") {
    const message = check(value);
    return message ? [{ path, message }] : [];
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => findText(item, check, [...path, i]));
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([key, item]) => {
      const message = check(key);
      return message ? [{ path: [...path, key], message: `field name ${message}` }] : findText(item, check, [...path, key]);
    });
  }
  return [];
}

export const textDefects = (value: unknown) => findText(value, textDefect);

/**
 * A procedure's input: a strict object whose text is checked once its shape
 * is valid (zod runs refinements only then, so a NUL in a field that fails
 * its own format is reported by that format instead).
 */
export function strictInput<Shape extends z.core.$ZodLooseShape>(shape: Shape) {
  return z.strictObject(shape).superRefine(refuseBadText);
}

/** A refinement that turns every text defect in a parsed value into an issue at its path. */
export function refuseBadText(value: unknown, ctx: z.RefinementCtx): void {
  for (const defect of textDefects(value)) ctx.addIssue({ code: "custom", path: defect.path, message: defect.message });
}

/**
 * Exactly one of `keys` must be given: checked at the first key's path, and
 * stated as JSON Schema `oneOf` so the OpenAPI document says it too.
 */
export function exactlyOne<T extends z.ZodType<Record<string, unknown>>>(schema: T, keys: [string, string, ...string[]]) {
  const message = `give exactly one of ${keys.join(" and ")}`;
  return schema
    .superRefine((value, ctx) => {
      if (keys.filter((key) => value[key] !== undefined).length !== 1) ctx.addIssue({ code: "custom", path: [keys[0]], message });
    })
    .meta({ description: `Give exactly one of ${keys.join(", ")}.`, oneOf: keys.map((key) => ({ required: [key] })) });
}

/** A record's id, as a path segment names it. */
export const recordId = z.string().min(1).max(64);

/** The input of every call that names one record by its id. */
export const idInput = strictInput({ id: recordId });
