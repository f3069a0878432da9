/** The REST surface's own answers: routing, methods, bodies, auth, OpenAPI — all problem+json where they fail. */
import { describe, expect, it } from "vitest";
import { GET as health } from "../../app/api/health/route";
import { app } from "../../server/app";

const call = (path: string, init?: RequestInit) => app.handleRest(new Request(`http://t/api${path}`, init));

async function expectProblem(res: Response, status: number, type: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  const body = await res.json();
  expect(body).toMatchObject({ status, type });
  expect(typeof body.title).toBe("string");
  expect(typeof body.detail).toBe("string");
}

describe("REST", () => {
  it("health answers 200 without authentication", async () => {
    const res = await health();
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", database: "up" });
  });

  it("401 problem without a token, with a malformed header and with an unknown token", async () => {
    await expectProblem(await call("/v1/products"), 401, "/problems/unauthorized");
    await expectProblem(await call("/v1/products", { headers: { authorization: "Basic abc" } }), 401, "/problems/unauthorized");
    await expectProblem(await call("/v1/products", { headers: { authorization: "Bearer eo_unknown" } }), 401, "/problems/unauthorized");
  });

  it("404 for an unknown path, 405 with Allow for a wrong method", async () => {
    await expectProblem(await call("/v1/nothing-here"), 404, "/problems/not-found");
    const res = await call("/v1/products", { method: "DELETE" });
    expect(res.headers.get("allow")).toBe("GET");
    await expectProblem(res, 405, "/problems/method-not-allowed");
  });

  it("serves an OpenAPI 3.1 document that lists the endpoints and the Idempotency-Key header", () => {
    const doc = app.openApiDocument();
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.paths["/v1/products"]).toHaveProperty("get");
  });
});
