import { describe, expect, it } from "vitest";
import { fieldRows, longEnumsOf, parameterRows, sharedParameters } from "./fields";

const codes = Array.from({ length: 20 }, (_, i) => `C${String(i).padStart(2, "0")}`);

describe("fieldRows", () => {
  it("flattens nested objects and arrays, and names a long enum instead of listing it", () => {
    const rows = fieldRows({
      type: "object",
      required: ["items"],
      properties: {
        items: { type: "array", items: { type: "object", required: ["sku"], properties: { sku: { type: "string" } } } },
        currency: { type: "string", title: "Currency code", enum: codes },
        note: { anyOf: [{ type: "string", maxLength: 5 }, { type: "null" }] },
        capture: { type: "boolean", default: true },
      },
    });
    expect(rows.map((r) => [r.name, r.type, r.required])).toEqual([
      ["items", "array of object", true],
      ["items[].sku", "string", true],
      ["currency", "string", false],
      ["note", "string or null", false],
      ["capture", "boolean", false],
    ]);
    expect(rows.find((r) => r.name === "note")?.rules).toEqual(["0–5 characters."]);
    expect(rows.find((r) => r.name === "capture")?.rules).toEqual(["Default `true`."]);
    expect(longEnumsOf([...rows, ...rows])).toEqual([{ id: "values-currency-code", title: "Currency code", values: codes }]);
  });
});

describe("sharedParameters", () => {
  it("keeps a parameter several operations describe alike, and its rows point at it", () => {
    const key = {
      name: "Idempotency-Key",
      in: "header" as const,
      required: true,
      description: "A key.",
      schema: { type: "string", maxLength: 9 },
    };
    const shared = sharedParameters([[key], [key], [{ ...key, name: "Other" }]]);
    expect(shared).toEqual([key]);
    expect(parameterRows([key], shared)[0]).toMatchObject({ sharedId: "parameter-header-idempotency-key", rules: [] });
  });
});
