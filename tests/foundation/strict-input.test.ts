/**
 * Strict input over REST and tRPC: every malformed class — an unknown field,
 * a duplicate JSON key, a NUL or invalid UTF-8 in any text, a body over
 * 64 KiB (also streamed with no Content-Length), a body that is not JSON, an
 * unknown currency — is a 4xx problem that names what is wrong, answered
 * before the key is claimed: no key row, no payment, no ledger entry, no
 * provider charge. Each case runs on a tenant of its own.
 */
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { MAX_BODY_BYTES } from "../../server/rest/body";
import { app } from "../../server/app";
import { PAYMENT, chargesFor, providerCharges } from "../payments/support";
import { api, newKey, newTenant, type Tenant } from "../support/api";
import { appWith } from "../support/app";

/** Everything a payment request could have written for a tenant, anywhere. */
async function footprint(tenant: Tenant) {
  const { sql } = database();
  const [row] = await sql<{ keys: number; payments: number; ledger: number; accounts: number }[]>`
    select (select count(*)::int from idempotency_keys where tenant_id = ${tenant.id}) as keys,
           (select count(*)::int from payments where tenant_id = ${tenant.id}) as payments,
           (select count(*)::int from ledger_entries where tenant_id = ${tenant.id}) as ledger,
           (select count(*)::int from accounts where tenant_id = ${tenant.id}) as accounts`;
  const payments = await sql<{ id: string }[]>`select id from payments where tenant_id = ${tenant.id}`;
  const charges = (await providerCharges()).filter((c) => payments.some((p) => p.id === c.reference)).length;
  return { ...row!, charges };
}

/** What a database error would bring along into a body. */
function expectNoInternals(text: string) {
  expect(text).not.toMatch(/\b(select|insert|update|params)\b|postgres|Failed query|\bat .*\.[jt]s:\d+/i);
}

const NOTHING = { keys: 0, payments: 0, ledger: 0, accounts: 0, charges: 0 };

/** POST raw bytes to the REST surface as `tenant`, with a fresh key. */
async function postRaw(tenant: Tenant, path: string, body: BodyInit, headers: Record<string, string> = {}) {
  const res = await app.handleRest(
    new Request(`http://test/api${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${tenant.token}`,
        "content-type": "application/json",
        "idempotency-key": newKey("strict"),
        ...headers,
      },
      body,
      duplex: "half",
    } as RequestInit),
  );
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as { type: string; errors?: { field: string }[]; detail: string } };
}

const fields = (a: { body: { errors?: { field: string }[] } }) => a.body.errors?.map((e) => e.field) ?? [];

const paymentJson = (extra = "") => `{"amount":"25.00","currency":"EUR","destination":"acct_test_123"${extra}}`;

/** A body of `size` bytes that never says how long it is. */
function streamOf(size: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= size) return controller.close();
      const chunk = new TextEncoder().encode(" ".repeat(Math.min(8192, size - sent)));
      sent += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
}

describe("REST: each malformed class is a 4xx naming the problem, and writes nothing", () => {
  const cases: [string, (t: Tenant) => ReturnType<typeof postRaw>, number, string, string?][] = [
    ["a misspelt field (captur)", (t) => postRaw(t, "/v1/payments", paymentJson(',"captur":false')), 400, "/problems/validation", "captur"],
    ["a duplicate key", (t) => postRaw(t, "/v1/payments", paymentJson(',"amount":"1.00"')), 400, "/problems/duplicate-key", "amount"],
    ["a NUL in a path parameter", (t) => postRaw(t, "/v1/payments/pay%00x/capture", "{}"), 400, "/problems/validation", "id"],
    [
      "a NUL in a known text field",
      (t) => postRaw(t, "/v1/coupons", `{"code":"A\\u0000B","percentOff":10}`),
      400,
      "/problems/validation",
      "code",
    ],
    [
      "a lone surrogate",
      (t) => postRaw(t, "/v1/orders", `{"items":[{"sku":"\\ud800","quantity":1}]}`),
      400,
      "/problems/validation",
      "items.0.sku",
    ],
    [
      "bytes that are not UTF-8",
      (t) =>
        postRaw(
          t,
          "/v1/payments",
          Buffer.concat([
            Buffer.from('{"amount":"25.00","currency":"EUR","destination":"acct_'),
            Buffer.from([0xff, 0xfe]),
            Buffer.from('"}'),
          ]),
        ),
      400,
      "/problems/invalid-utf8",
      "destination",
    ],
    [
      "a currency ISO 4217 does not have (ZZZ)",
      (t) => postRaw(t, "/v1/payments", JSON.stringify({ ...PAYMENT, currency: "ZZZ" })),
      400,
      "/problems/validation",
      "currency",
    ],
    [
      "a form instead of JSON",
      (t) => postRaw(t, "/v1/payments", "amount=25.00&currency=EUR", { "content-type": "application/x-www-form-urlencoded" }),
      415,
      "/problems/unsupported-media-type",
    ],
    [
      "no Content-Type",
      (t) => postRaw(t, "/v1/payments", new Blob([paymentJson()]), { "content-type": "" }),
      415,
      "/problems/unsupported-media-type",
    ],
    [
      "a body over 64 KiB",
      (t) => postRaw(t, "/v1/payments", paymentJson(`,"pad":"${"x".repeat(MAX_BODY_BYTES)}"`)),
      413,
      "/problems/body-too-large",
    ],
    [
      "a streamed body over 64 KiB with no Content-Length",
      (t) => postRaw(t, "/v1/payments", streamOf(MAX_BODY_BYTES + 1)),
      413,
      "/problems/body-too-large",
    ],
    [
      "a body field the path already gives (id)",
      (t) => postRaw(t, "/v1/payments/pay_x/capture", '{"id":"pay_y"}'),
      400,
      "/problems/validation",
      "id",
    ],
    ["an account in an unknown currency", (t) => postRaw(t, "/v1/accounts", '{"currency":"ZZZ"}'), 400, "/problems/validation", "currency"],
  ];

  it.each(cases)("%s", async (_label, send, status, type, field) => {
    const tenant = await newTenant("strict-rest");
    const answer = await send(tenant);
    expect(answer.status, answer.text).toBe(status);
    expect(answer.body.type).toBe(type);
    if (field) expect(fields(answer)).toContain(field);
    expectNoInternals(answer.text);
    expect(await footprint(tenant)).toEqual(NOTHING);
  });

  it("a NUL or a malformed escape in a path or query parameter is a 400, never a 5xx", async () => {
    const tenant = await newTenant("strict-params");
    const client = api(tenant);
    for (const path of [
      "/v1/payments/pay%00x",
      "/v1/orders/%00",
      "/v1/ledger?idempotencyKey=a%00b",
      "/v1/payments/%E0%A4%A",
      "/v1/payments/%FF",
    ]) {
      const answer = await client.get(path);
      expect(answer.status, `${path}: ${answer.text}`).toBe(400);
      expectNoInternals(answer.text);
    }
  });

  it("a query parameter given twice is a 400 naming it", async () => {
    const answer = await api(await newTenant("strict-query-twice")).get("/v1/payments?limit=5&limit=50");
    expect(answer.status).toBe(400);
    expect(fields(answer)).toEqual(["limit"]);
  });

  it("a body of many unknown fields names five and counts the rest: the answer stays smaller than the request", async () => {
    const tenant = await newTenant("strict-many-unknown");
    const extra = Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`field${i}`, 1]));
    const request = JSON.stringify({ ...PAYMENT, ...extra });
    const answer = await postRaw(tenant, "/v1/payments", request);
    expect(answer.status).toBe(400);
    expect(fields(answer)).toEqual(["field0", "field1", "field2", "field3", "field4", "(more)"]);
    expect(answer.body.detail).toContain("and 1995 more fields");
    expect(answer.text.length).toBeLessThan(1_000);
    expect(await footprint(tenant)).toEqual(NOTHING);
  });

  it("an unknown query parameter is named", async () => {
    const answer = await api(await newTenant("strict-query")).get("/v1/payments?limt=5");
    expect(answer.status).toBe(400);
    expect(fields(answer)).toContain("limt");
  });

  it("the same request, well formed, still charges once (the checks refuse only what is wrong)", async () => {
    const tenant = await newTenant("strict-ok");
    const answer = await api(tenant).post("/v1/payments", { ...PAYMENT, currency: "JPY" }, newKey());
    expect(answer.status, answer.text).toBe(201);
    expect(await chargesFor(answer.body.id as string)).toHaveLength(1);
  });

  it("the webhook tolerates fields it does not know", async () => {
    const answer = await app.handleRest(
      new Request("http://test/api/v1/webhooks/psp", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"id":"evt_x","type":"t","data":{},"extra":1}',
      }),
    );
    // Unknown fields pass the schema; the signature is what refuses this one.
    expect(answer.status).toBe(401);
  });
});

function multipart(values: Record<string, string>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(values)) form.set(name, value);
  return form;
}

describe("tRPC: the same body reader and schemas", () => {
  // The storefront procedures exist only in demo mode (or for a tenant a deployment names).
  const { POST: trpcPost, GET: trpcGet } = appWith({ DEMO_MODE: true }).trpc;
  const trpc = (path: string, body: BodyInit, headers: Record<string, string> = {}) =>
    trpcPost(
      new Request(`http://app.test/api/trpc/${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body,
      }),
    );

  it.each([
    ["a duplicate key", () => trpc("checkout.keyStatus", '{"key":"a","key":"b"}'), 400],
    ["a form post", () => trpc("checkout.pay", "items=x", { "content-type": "application/x-www-form-urlencoded" }), 415],
    [
      "a multipart post",
      () => trpcPost(new Request("http://app.test/api/trpc/checkout.pay", { method: "POST", body: multipart({ items: "x" }) })),
      415,
    ],
    [
      "an admin form post, even from the app's origin",
      () =>
        trpc("admin.keys.purgeExpired", "tenantId=x", {
          "content-type": "application/x-www-form-urlencoded",
          host: "app.test",
          origin: "http://app.test",
        }),
      403,
    ],
    [
      "an admin multipart post",
      () =>
        trpcPost(
          new Request("http://app.test/api/trpc/admin.keys.purgeExpired", {
            method: "POST",
            headers: { host: "app.test", origin: "http://app.test" },
            body: multipart({ tenantId: "x" }),
          }),
        ),
      403,
    ],
    [
      "an admin JSON post from another port",
      () => trpc("admin.keys.purgeExpired", "{}", { host: "app.test", origin: "http://app.test:8080" }),
      403,
    ],
    ["a body over 64 KiB", () => trpc("checkout.pay", `{"items":[],"pad":"${"x".repeat(MAX_BODY_BYTES)}"}`), 413],
  ])("%s", async (_label, send, status) => {
    const res = await send();
    expect(res.status).toBe(status);
  });

  it("an unknown field in a mutation is a 400 naming it; nothing is claimed", async () => {
    const key = newKey("trpc-strict");
    const res = await trpc("checkout.pay", JSON.stringify({ items: [{ sku: "X", quantity: 1 }], colour: "red" }), {
      "idempotency-key": key,
    });
    const body = (await res.json()) as { error: { data: { problem: { errors: { field: string }[] } } } };
    expect(res.status).toBe(400);
    expect(body.error.data.problem.errors.map((e) => e.field)).toContain("colour");
    const { sql } = database();
    expect(await sql`select 1 from idempotency_keys where key = ${key}`).toHaveLength(0);
  });

  it("a NUL in a query input is a 400 naming the field, not a database error", async () => {
    const input = encodeURIComponent(JSON.stringify({ key: "a\u0000b" }));
    const res = await trpcGet(new Request(`http://app.test/api/trpc/checkout.keyStatus?input=${input}`));
    const text = await res.text();
    expect(res.status, text).toBe(400);
    expect(text).toContain('"field":"key"');
    expectNoInternals(text);
  });
});
