/**
 * The one reader of JSON request bodies, for REST, tRPC and the admin
 * sign-in alike. In this order, each answered before anything runs:
 * - a type other than `application/json`: 415;
 * - more than MAX_BODY_BYTES: 413, counted while streaming (a missing or
 *   lying Content-Length changes nothing) and before any parsing;
 * - JSON nested deeper than MAX_JSON_DEPTH: 400, found in one linear pass
 *   before anything parses or walks the value (server/json-shape.ts);
 * - bytes that are not UTF-8: 400 naming the fields whose text they fall in;
 * - text that is not JSON: 400;
 * - an object with the same key twice: 400 naming it (JSON.parse would let
 *   the last one win silently).
 * Fields the procedure does not know and NUL characters are the input
 * schema's to refuse (server/input.ts), since those apply to query strings too.
 */
import { DomainError, fewErrors, namedFields, type ProblemSlug } from "../errors";
import { findText } from "../input";
import { jsonShape, MAX_JSON_DEPTH } from "../json-shape";

/** Whether a request body is declared as JSON (`application/json`, parameters such as charset allowed). */
export function isJsonContentType(headers: Headers): boolean {
  return headers.get("content-type")?.split(";")[0]?.trim().toLowerCase() === "application/json";
}

/** The largest body accepted: far above any request of this API, far below anything costly. */
export const MAX_BODY_BYTES = 64 * 1024;

const bodyError = <S extends ProblemSlug>(
  slug: S,
  status: DomainError<S>["status"],
  message: string,
  errors: { field: string; message: string }[] = [],
) => new DomainError(slug, status, message, errors.length ? { errors } : {});

async function readLimited(req: Request, limit: number): Promise<Uint8Array> {
  const tooLarge = () => bodyError("body-too-large", 413, `The request body is larger than ${limit} bytes.`);
  const declared = Number(req.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  if (!req.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

const tooDeep = () =>
  bodyError("json-too-deep", 400, `The request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`, [
    { field: "(body)", message: `nests more than ${MAX_JSON_DEPTH} levels deep` },
  ]);

/** A JSON text that reaches the app another way (tRPC's GET `input`): refused as a body would be when it nests too deep. */
export function refuseDeepJson(text: string): void {
  if (jsonShape(text).tooDeep) throw tooDeep();
}

const fieldPath = (path: (string | number)[]) => path.map(String).join(".") || "(body)";

/** Text from UTF-8 bytes; invalid bytes are reported in the fields they appear in. */
function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    // Decoded again with U+FFFD in place of each bad sequence, the fields holding one can be named.
    const lenient = new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
    let fields = ["(body)"];
    // Too deep to walk cheaply, or not JSON either: the body as a whole is named.
    if (!jsonShape(lenient).tooDeep) {
      try {
        const marked = findText(JSON.parse(lenient) as unknown, (text) =>
          text.includes("\uFFFD") ? "must be valid UTF-8 text" : undefined,
        );
        if (marked.length) fields = marked.map((d) => fieldPath(d.path));
      } catch {
        // Not JSON: the body as a whole.
      }
    }
    const errors = fields.map((field) => ({ field, message: "must be valid UTF-8 text" }));
    throw new DomainError("invalid-utf8", 400, `The request body is not valid UTF-8 (${namedFields(fields)}).`, {
      errors: fewErrors(errors),
    });
  }
}

/**
 * The JSON value of a request body, or a DomainError (415, 413 or 400) that
 * says what is wrong. An empty body is `{}`: actions such as capture take no fields.
 */
export async function readJsonBody(req: Request, limit = MAX_BODY_BYTES): Promise<{ value: unknown; text: string }> {
  if (!isJsonContentType(req.headers)) {
    throw bodyError("unsupported-media-type", 415, "Send the request body as JSON with Content-Type: application/json.");
  }
  const text = decodeUtf8(await readLimited(req, limit));
  if (text.trim() === "") return { value: {}, text };
  const shape = jsonShape(text);
  if (shape.tooDeep) throw tooDeep();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw bodyError("invalid-json", 400, "The request body is not valid JSON.", [{ field: "(body)", message: "not valid JSON" }]);
  }
  if (shape.duplicate !== undefined) {
    const field = shape.duplicate;
    throw bodyError("duplicate-key", 400, `The request body names ${field} more than once.`, [
      { field, message: "appears more than once" },
    ]);
  }
  return { value, text };
}
