/**
 * No error body carries SQL, parameters, stack traces or causes. A query that
 * fails in PostgreSQL (a real division by zero, with a parameter) answers 500
 * "internal error" with a request id, over REST and over tRPC, to an
 * anonymous caller; the log line with that id holds the cause.
 */
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { logger } from "../../server/logger";
import { app } from "../../server/app";
import { publicProcedure, router } from "../../server/trpc";

const SECRET_PARAM = "param-that-must-not-leak";

const brokenRouter = router({
  broken: publicProcedure
    .meta({ rest: { method: "GET", path: "/broken", summary: "fails in PostgreSQL", tags: ["test"] } })
    .query(async ({ ctx }) => {
      await ctx.db.execute(sql`select 1 / 0 where ${SECRET_PARAM} = ${SECRET_PARAM}`);
      return "unreachable";
    }),
});

const LEAKS = [/select/i, /division/i, new RegExp(SECRET_PARAM), /stack/i, /at .*\.ts/, /postgres/i, /Failed query/i];

function expectNothingInternal(text: string) {
  for (const leak of LEAKS) expect(text).not.toMatch(leak);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("an internal error", () => {
  it("over REST: 500 problem 'internal error' with a request id that the log has, and nothing else", async () => {
    const logged = vi.spyOn(logger, "error");
    const res = await app.restHandlerFor(brokenRouter)(new Request("http://test/api/broken"));
    const text = await res.text();
    expect(res.status).toBe(500);
    expectNothingInternal(text);
    const body = JSON.parse(text) as { detail: string; requestId: string; type: string };
    expect(body).toMatchObject({ status: 500, type: "/problems/internal", detail: "internal error" });
    expect(body.requestId).toMatch(/^[0-9a-f-]{36}$/);
    const line = logged.mock.calls.find(([fields]) => (fields as { requestId?: string }).requestId === body.requestId);
    expect(line?.[0]).toMatchObject({ err: expect.anything() });
  });

  it("over tRPC: the same, in the error shape, without message, stack or cause", async () => {
    const logged = vi.spyOn(logger, "error");
    const res = await fetchRequestHandler({
      endpoint: "/api/trpc",
      req: new Request("http://test/api/trpc/broken"),
      router: brokenRouter,
      createContext: ({ req }) => app.createContextInner({ headers: req.headers }),
    });
    const text = await res.text();
    expect(res.status).toBe(500);
    expectNothingInternal(text);
    const { error } = JSON.parse(text) as {
      error: { message: string; data: Record<string, unknown> & { problem: { requestId: string } } };
    };
    expect(error.message).toBe("internal error");
    expect(error.data).not.toHaveProperty("stack");
    expect(logged.mock.calls.some(([fields]) => (fields as { requestId?: string }).requestId === error.data.problem.requestId)).toBe(true);
  });
});
