/**
 * The OpenAPI document's own promises, checked without a server: every REST
 * operation has an example its own schemas accept, every problem type the
 * middleware raises is in the registry, and the API guide links every type's page.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { app } from "../../server/app";
import * as idempotency from "@exactly-once/trpc";
import { isProblemSlug, problemPage, PROBLEMS, problemType, type ProblemSlug } from "../../server/problems";
import { EXAMPLES } from "../../server/rest/examples";

type Operation = { operationId: string; security?: unknown; requestBody?: { required: boolean }; responses: Record<string, unknown> };
const operations = () =>
  Object.entries(app.openApiDocument().paths).flatMap(([path, methods]) =>
    Object.entries(methods as Record<string, Operation>).map(([method, op]) => ({ path, method, op })),
  );

describe("the OpenAPI document", () => {
  it("has an example for every operation, accepted by the procedure's input and output schemas", async () => {
    const { createRegistry } = await import("../../server/registry");
    const { app } = await import("../../server/app");
    const rest = createRegistry(app.appRouter).procedures.filter((p) => p.meta.rest);
    expect(Object.keys(EXAMPLES).sort()).toEqual(rest.map((p) => p.path).sort());
    for (const p of rest) {
      const example = EXAMPLES[p.path]!;
      if (p.input) expect(p.input.safeParse(example.request ?? {}).error, p.path).toBeUndefined();
      expect((p.output as z.ZodType).safeParse(example.response).error, p.path).toBeUndefined();
    }
  });

  it("answers 404 on every route with an id, signs the webhook with Psp-Signature, asks no body of capture and void", () => {
    for (const { path, op } of operations()) if (path.includes("{id}")) expect(op.responses, path).toHaveProperty("404");
    const webhook = operations().find((o) => o.op.operationId === "webhooks_psp")!.op;
    expect(webhook.security).toEqual([{ pspSignature: [] }]);
    for (const id of ["payments_capture", "payments_void"])
      expect(operations().find((o) => o.op.operationId === id)!.op.requestBody!.required).toBe(false);
  });

  it("lists every problem type the middleware raises", () => {
    const raised = [
      new idempotency.IdempotencyKeyMissingError(),
      new idempotency.IdempotencyKeyInvalidError(300),
      new idempotency.IdempotencyKeyMismatchError("k", "payments.create"),
      new idempotency.IdempotencyKeyInProgressError("k", 1),
      new idempotency.IdempotencyLeaseLostError("k", 1),
    ];
    const slugs = raised.map((error) => error.problem);
    for (const slug of slugs) expect(isProblemSlug(slug), slug).toBe(true);
  });

  it("is linked from docs/API.md, one page per problem type", () => {
    const guide = readFileSync("docs/API.md", "utf8");
    for (const slug of Object.keys(PROBLEMS) as ProblemSlug[])
      expect(guide, slug).toContain(`[\`${problemType(slug)}\`](${problemPage(slug)})`);
  });
});
