/** How the kit derives the other payload and reads a count. */
import { describe, expect, it } from "vitest";
import { derivePayload, readCount, UsageError } from "../src/index";

describe("derivePayload", () => {
  it("raises the first number or decimal string by one, keeping its form", () => {
    expect(derivePayload('{"amount":"1.00","currency":"EUR"}')).toBe('{"amount":"2.00","currency":"EUR"}');
    expect(derivePayload('{"sku":"A","quantity":2}')).toBe('{"sku":"A","quantity":3}');
    expect(derivePayload('{"cents":"99999999999999999999"}')).toBe('{"cents":"100000000000000000000"}');
  });
  it("else changes the first string", () => {
    expect(derivePayload('{"destination":"acct_1","capture":true}')).toBe('{"destination":"acct_1-alt","capture":true}');
  });
  it("asks for --data-alt when there is nothing to change", () => {
    expect(() => derivePayload('{"capture":true}')).toThrow(UsageError);
    expect(() => derivePayload("[1]")).toThrow(/not a JSON object/);
  });
});

describe("readCount", () => {
  it.each([
    ["7", 7],
    ["[1,2]", 2],
    ['{"count":3}', 3],
    ['{"total":4,"data":[]}', 4],
    ['{"data":[{},{},{}]}', 3],
  ])("%s counts %d", (body, n) => expect(readCount(body)).toBe(n));
  it.each(["", "{}", '{"count":"3"}', "<html>"])("%j is no count", (body) => expect(readCount(body)).toBeUndefined());
});
