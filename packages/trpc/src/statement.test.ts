/** Statements composed once: the text they splice, the parameters they bind, and one strings array for every call. */
import type { ISql } from "postgres";
import { describe, expect, it } from "vitest";
import { identifier, sqlText, SqlText, statement, type Statement } from "./statement.js";

type Input = { a: string; b: number };

/** What `q` was called with: a stand-in for postgres-js's tag, which sends nothing until awaited. */
function sent<I>(s: Statement<I>, input: I): { strings: TemplateStringsArray; values: unknown[] } {
  let call: { strings: TemplateStringsArray; values: unknown[] } | undefined;
  const q = ((strings: TemplateStringsArray, ...values: unknown[]) => {
    call = { strings, values };
    return undefined;
  }) as unknown as ISql;
  s.on(q, input);
  return call!;
}

describe("statement", () => {
  const inner = statement<Input>`b = ${(x) => x.b}`;
  const composed = statement<Input>`select ${new SqlText('"k".x')} from t where a = ${(x) => x.a} and ${inner} limit ${() => 1}`;

  it("splices text and statements in, and makes every function a parameter, in the order they stand", () => {
    const { strings, values } = sent(composed, { a: "A", b: 2 });
    expect([...strings]).toEqual(['select "k".x from t where a = ', " and b = ", " limit ", ""]);
    expect(strings.raw).toEqual([...strings]);
    expect(values).toEqual(["A", 2, 1]);
  });

  it("sends the same strings array on every call, so postgres-js finds its prepared statement by it", () => {
    const first = sent(composed, { a: "A", b: 2 });
    const second = sent(composed, { a: "B", b: 3 });
    expect(second.strings).toBe(first.strings);
    expect(second.values).toEqual(["B", 3, 1]);
  });

  it("builds text from text, and quotes identifiers as postgres-js does", () => {
    const rule = sqlText`${identifier("k")}.expires_at <= now() and ${identifier('we"ird')}.x`;
    expect(rule.text).toBe('"k".expires_at <= now() and "we""ird".x');
    expect([...sent(statement<Input>`where ${rule}`, { a: "", b: 0 }).strings]).toEqual(['where "k".expires_at <= now() and "we""ird".x']);
  });
});
