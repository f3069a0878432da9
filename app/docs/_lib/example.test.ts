import { describe, expect, it } from "vitest";
import { answerOf, curlOf } from "./example";
import type { Operation } from "./operations";

const operation = (method: string, path: string, op: Partial<Operation["op"]>): Operation => ({
  anchor: "x",
  method,
  path,
  op: {
    operationId: "x",
    summary: "x",
    responses: { "201": { description: "x", content: { "application/json": { schema: {}, example: { ok: true } } } } },
    ...op,
  },
});

describe("curlOf", () => {
  it("fills the path, sends the key and quotes the body for a shell", () => {
    const call = curlOf(
      operation("POST", "/v1/payments/{id}/refunds", {
        parameters: [
          { name: "id", in: "path", required: true, schema: {}, example: "pay_1" },
          { name: "Idempotency-Key", in: "header", required: true, schema: {}, example: "k-1" },
        ],
        requestBody: { content: { "application/json": { schema: {}, example: { note: "it's" } } } },
      }),
    );
    expect(call).toBe(
      [
        `curl -X POST "$BASE/api/v1/payments/pay_1/refunds"`,
        `  -H "Authorization: Bearer $TOKEN"`,
        `  -H 'Idempotency-Key: k-1'`,
        `  -H 'Content-Type: application/json'`,
        `  -d '{"note":"it'\\''s"}'`,
      ].join(" \\\n"),
    );
  });

  it("spreads an exploded query object into parameters and sends no token where security is waived", () => {
    const call = curlOf(
      operation("GET", "/v1/ledger", {
        security: [],
        parameters: [{ name: "filter", in: "query", required: true, schema: {}, example: { eventId: "evt 1" } }],
      }),
    );
    expect(call).toBe(`curl "$BASE/api/v1/ledger?eventId=evt+1"`);
  });
});

describe("answerOf", () => {
  it("gives the first 2xx and its example", () => {
    expect(answerOf(operation("GET", "/x", {}))).toEqual({ status: "201", body: '{\n  "ok": true\n}' });
  });
});
