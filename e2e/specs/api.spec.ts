/** The REST surface from outside: health, the catalog with a tenant token, problem+json errors, the OpenAPI document. */
import { expect, test } from "../fixtures";

test("GET /api/health answers 200 without a token", async ({ request }) => {
  const response = await request.get("/api/health");

  expect(response.status()).toBe(200);
  expect(await response.json()).toEqual({ status: "ok", database: "up" });
});

test("GET /api/v1/products lists the catalog in the database for the tenant's token", async ({ api, catalog }) => {
  const response = await api.get("/api/v1/products");

  expect(response.status()).toBe(200);
  const body = (await response.json()) as { data: { price: string }[] };
  expect(body).toEqual({ data: catalog });
  for (const product of body.data) expect(product.price).toMatch(/^\d+\.\d{2}$/);
});

test.describe("GET /api/v1/products without a valid token", () => {
  const cases: { name: string; authorization: (token: string) => string | undefined }[] = [
    { name: "no token", authorization: () => undefined },
    // A near miss of a real token: it must match exactly, not by prefix.
    { name: "a wrong token", authorization: (token) => `Bearer ${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}` },
  ];

  for (const { name, authorization } of cases) {
    test(`answers 401 problem+json with ${name}`, async ({ request, tenant }) => {
      const header = authorization(tenant.token);
      const response = await request.get("/api/v1/products", { headers: header ? { authorization: header } : {} });

      expect(response.status()).toBe(401);
      expect(response.headers()["content-type"]).toContain("application/problem+json");
      expect(await response.json()).toEqual(
        expect.objectContaining({ type: expect.any(String), title: "Unauthorized", status: 401, detail: expect.any(String) }),
      );
    });
  }
});

test("GET /api/openapi.json is an OpenAPI 3 document with /v1/products", async ({ request }) => {
  const response = await request.get("/api/openapi.json");

  expect(response.status()).toBe(200);
  expect(response.headers()["content-type"]).toContain("application/json");
  const document = (await response.json()) as { openapi: string; paths: Record<string, unknown> };
  expect(document.openapi).toMatch(/^3\./);
  expect(document.paths).toHaveProperty(["/v1/products", "get"]);
});
