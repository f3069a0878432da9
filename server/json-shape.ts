/**
 * The shape of a JSON text, checked in one pass before anything builds or
 * walks its value: how deep it nests and whether an object names a key twice.
 *
 * One pass, linear in the text's length whatever its shape: a frame per open
 * bracket holds only its own keys, and a path is built only for the one
 * duplicate reported. (The scanner it replaces copied the whole path at every
 * bracket, so a 64 KiB body of nested arrays cost time and memory with the
 * square of its depth and ran the server out of memory.) It also bounds what
 * comes after: JSON.parse, zod, the fingerprint and the text checks recurse
 * over the value, and a value at most MAX_JSON_DEPTH deep keeps them cheap.
 *
 * It never throws and always ends, whatever the text: on text that is not
 * JSON it stops early or reports nothing, and JSON.parse then refuses it.
 */

/** Deeper than any request of this API (its deepest is three levels), far below what costs anything. */
export const MAX_JSON_DEPTH = 64;

export type JsonShape = { tooDeep: true } | { tooDeep: false; duplicate?: string };

type Frame = { keys: Set<string> | undefined; key: string; index: number };

const pathOf = (stack: Frame[], key: string) =>
  [...stack.slice(0, -1).map((frame) => (frame.keys ? frame.key : String(frame.index))), key].join(".");

/** The key a JSON string literal spells, or undefined when the literal is malformed (JSON.parse will say so). */
function keyText(text: string, start: number, end: number): string | undefined {
  const inner = text.slice(start + 1, end);
  if (!inner.includes("\\")) return inner;
  try {
    return JSON.parse(text.slice(start, end + 1)) as string;
  } catch {
    return undefined;
  }
}

export function jsonShape(text: string, maxDepth = MAX_JSON_DEPTH): JsonShape {
  const stack: Frame[] = [];
  let duplicate: string | undefined;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c /* \ */ ? 2 : 1;
      if (j >= text.length) break;
      const frame = stack[stack.length - 1];
      if (expectKey && frame?.keys && duplicate === undefined) {
        const key = keyText(text, i, j);
        if (key === undefined) break;
        if (frame.keys.has(key)) duplicate = pathOf(stack, key);
        frame.keys.add(key);
        frame.key = key;
      }
      expectKey = false;
      i = j;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (stack.length >= maxDepth) return { tooDeep: true };
      stack.push({ keys: c === 0x7b ? new Set() : undefined, key: "", index: 0 });
      expectKey = c === 0x7b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      const frame = stack[stack.length - 1];
      if (frame?.keys) expectKey = true;
      else if (frame) frame.index += 1;
    }
  }
  return duplicate === undefined ? { tooDeep: false } : { tooDeep: false, duplicate };
}
