/** Properties of the canonical form: equivalent inputs hash alike, different inputs never collide. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, fingerprint, MAX_FINGERPRINT_DEPTH, NotCanonicalizableError } from "./canonical.js";

/** Any unicode, already in NFC (normalisation has its own test below). */
const text = (maxLength?: number) => fc.string({ unit: "binary", maxLength }).map((s) => s.normalize("NFC"));

/** JSON values as a client could send them (finite numbers, any unicode). */
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    text(),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(text(6), tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** The same value with every object's keys in another order. */
function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((v, i) => shuffleKeys(v, seed + i));
  if (value && typeof value === "object") {
    const entries = Object.entries(value);
    const rotated = entries.map((_, i) => entries[(i + seed) % entries.length]!);
    return Object.fromEntries(rotated.reverse().map(([k, v]) => [k, shuffleKeys(v, seed + 1)]));
  }
  return value;
}

describe("canonicalJson", () => {
  it("ignores key order", () => {
    fc.assert(
      fc.property(json, fc.nat(), (value, seed) => {
        expect(canonicalJson(shuffleKeys(value, seed))).toBe(canonicalJson(value));
      }),
    );
  });

  it("survives a JSON round trip, whatever the whitespace or number spelling the client used", () => {
    fc.assert(
      fc.property(json, (value) => {
        const reparsed = JSON.parse(JSON.stringify(value, null, 2));
        expect(canonicalJson(reparsed)).toBe(canonicalJson(value));
      }),
    );
    expect(canonicalJson(JSON.parse('{"a":1.0,"b":1e2,"c":-0}'))).toBe('{"a":1,"b":100,"c":0}');
  });

  it("is itself JSON that parses back to an equal value (so distinct values cannot share a text)", () => {
    fc.assert(
      fc.property(json, (value) => {
        const parsed = JSON.parse(canonicalJson(value));
        expect(canonicalJson(parsed)).toBe(canonicalJson(value));
        expect(parsed).toEqual(JSON.parse(JSON.stringify(value, (_k, v) => (Object.is(v, -0) ? 0 : v))));
      }),
      { numRuns: 200 },
    );
  });

  it("normalises unicode to NFC in strings and keys", () => {
    const composed = "caf\u00e9";
    const decomposed = "cafe\u0301";
    expect(canonicalJson({ [decomposed]: decomposed })).toBe(canonicalJson({ [composed]: composed }));
  });

  it("refuses what is not JSON", () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 10n, () => 1, Symbol("s")]) {
      expect(() => canonicalJson({ x: bad })).toThrow(NotCanonicalizableError);
    }
  });

  it("names where it refused, with the path spelled as before", () => {
    expect(() => canonicalJson({ a: [1, { b: Number.NaN }] })).toThrow("Cannot fingerprint NaN at .a[1].b");
  });

  it("walks 64 levels, refuses the 65th, and stays linear in size (32,000 levels refused at once)", () => {
    const nest = (depth: number): unknown => {
      let value: unknown = 1;
      for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { k: value };
      return value;
    };
    expect(canonicalJson(nest(MAX_FINGERPRINT_DEPTH))).toContain("1");
    expect(() => canonicalJson(nest(MAX_FINGERPRINT_DEPTH + 1))).toThrow(`nested more than ${MAX_FINGERPRINT_DEPTH} levels deep`);
    // Far past any stack: refused at level 64 without walking the rest.
    expect(() => canonicalJson(nest(32_000))).toThrow(NotCanonicalizableError);
    // Wide is fine: 50,000 members in one object, a cost linear in them.
    const wide = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, [i]]));
    expect(canonicalJson(wide).length).toBeGreaterThan(50_000);
  });
});

describe("fingerprint", () => {
  it("differs for different inputs and for different procedures", () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        fc.pre(canonicalJson(a) !== canonicalJson(b));
        expect(fingerprint("p", a).hash).not.toBe(fingerprint("p", b).hash);
      }),
    );
    expect(fingerprint("payments.create", { a: 1 }).hash).not.toBe(fingerprint("payments.capture", { a: 1 }).hash);
  });

  it("is a pinned SHA-256 of the documented text", () => {
    const fp = fingerprint("payments.create", { currency: "EUR", amount: 2500 });
    expect(fp.request).toBe('payments.create\n{"amount":2500,"currency":"EUR"}');
    expect(fp.hash).toBe("efcf69e3ce6abb0cf9b1fb328634b9404952984b89abcc2ff4af8612fe2bda4e");
  });
});
