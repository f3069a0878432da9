/**
 * Every REST operation sent through Prism's validating proxy, each success
 * and each refusal the API can be made to give, with chained real data.
 *
 * Two proxies in front of one app (scripts/contract/run.ts):
 * - `strict` (`--errors`) takes the requests the document allows: Prism must
 *   pass each one on, and neither the request nor the answer may have a
 *   violation (no `sl-violations` header, no Prism error of its own);
 * - `lenient` takes the requests the API refuses as malformed: Prism must
 *   find the request invalid too (else the document accepts what the API
 *   refuses) and pass it on, and the answer may have no violation.
 * Each answer's status (and problem type) is the one expected. The answers
 * are kept for the generated client's type check (client-check.ts).
 */
import { createHmac, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { problemType, type ProblemSlug } from "../../server/problems";
import { HEADER } from "../../server/rest/respond";

export type Answer = { operation: string; status: number; body: unknown };
/**
 * `direct` skips Prism: it re-serialises the JSON it passes on, so a
 * duplicate key never reaches the app through it.
 */
type Via = "strict" | "lenient" | "direct";
type Case = {
  name: string;
  via?: Via;
  method?: "GET" | "POST" | "DELETE";
  path: string;
  /** An object is sent as JSON; a string as it is. */
  body?: unknown;
  headers?: Record<string, string>;
  /** A fresh Idempotency-Key unless one is given; `null` sends none. */
  key?: string | null;
  token?: string | null;
  status: number;
  type?: ProblemSlug;
  replayed?: boolean;
  header?: string;
  /**
   * Request violations Prism reports wrongly, by location: it lowercases the
   * query's names before it reads an exploded object parameter, so
   * `idempotencyKey` is never found (prism-http's validators/params.js).
   */
  prismMisreads?: string;
  /** The operation the answer belongs to, for the client's type check. */
  operation?: string;
};

type Document = { paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>> };

/**
 * The headers of the API's own an answer carries that its response in the
 * document does not declare. Prism and Portman only look at declared ones,
 * so an undeclared `Idempotent-Replayed` would pass them both.
 */
function undeclaredHeaders(document: Document, method: string, url: string, status: number, headers: Headers): string[] {
  const path = new URL(url).pathname.replace(/^\/api/, "");
  const template = Object.keys(document.paths).find((t) => new RegExp(`^${t.replace(/\{\w+\}/g, "[^/]+")}$`).test(path));
  const response = template ? document.paths[template]![method.toLowerCase()]?.responses[String(status)] : undefined;
  if (!response) return [];
  const declared = new Set(Object.keys(response.headers ?? {}).map((name) => name.toLowerCase()));
  return Object.values(HEADER).filter((name) => headers.has(name) && !declared.has(name.toLowerCase()));
}

export type TrafficOptions = {
  document: Document;
  strict: string;
  lenient: string;
  direct: string;
  token: string;
  webhookSecret: string;
  log: (line: string) => void;
};
/** `violations`: on requests the document allows and on every answer; `refused`: malformed requests the document refused too. */
export type TrafficResult = { requests: number; violations: number; refused: number; failures: string[]; answers: Answer[] };

type Violation = { location?: string[]; message?: string; code?: string | number };

export async function runTraffic(o: TrafficOptions): Promise<TrafficResult> {
  const result: TrafficResult = { requests: 0, violations: 0, refused: 0, failures: [], answers: [] };

  async function send(c: Case): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
    const via = c.via ?? "strict";
    const method = c.method ?? (c.body === undefined ? "GET" : "POST");
    const headers: Record<string, string> = { ...(c.token === null ? {} : { authorization: `Bearer ${c.token ?? o.token}` }) };
    if (method === "POST") {
      headers["content-type"] = "application/json";
      if (c.key !== null && !c.path.startsWith("/v1/webhooks")) headers["idempotency-key"] = c.key ?? randomUUID();
    }
    Object.assign(headers, c.headers);
    const body = c.body === undefined ? undefined : typeof c.body === "string" ? c.body : JSON.stringify(c.body);
    const res = await fetch(`${{ strict: o.strict, lenient: o.lenient, direct: o.direct }[via]}${c.path}`, { method, headers, body });
    result.requests += 1;
    const text = await res.text();
    const violations = JSON.parse(res.headers.get("sl-violations") ?? "[]") as Violation[];
    const onRequest = violations.filter((v) => v.location?.[0] === "request" && v.location.slice(1).join(".") !== c.prismMisreads);
    const onResponse = violations.filter((v) => v.location?.[0] !== "request");
    const fail = (why: string) => result.failures.push(`${c.name}: ${why}`);
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      fail(`the answer is not JSON: ${text.slice(0, 200)}`);
    }
    const prismOwn = typeof parsed.type === "string" && parsed.type.startsWith("https://stoplight.io/prism/");
    if (prismOwn) fail(`Prism answered itself (${String(parsed.title)}: ${String(parsed.detail)})`);
    if (via === "strict" && onRequest.length)
      fail(`the document refuses a request the API takes: ${onRequest.map((v) => v.message).join("; ")}`);
    if (via === "lenient" && onRequest.length === 0 && !c.prismMisreads) fail("the document accepts a request the API refuses");
    if (via === "lenient" && onRequest.length > 0) result.refused += 1;
    if (onResponse.length)
      fail(`the answer breaks the document: ${onResponse.map((v) => `${v.location?.join(".")}: ${v.message}`).join("; ")}`);
    result.violations += (via === "strict" ? onRequest.length : 0) + onResponse.length + (prismOwn ? 1 : 0);
    if (res.status !== c.status) fail(`status ${res.status}, expected ${c.status}: ${text.slice(0, 300)}`);
    if (c.type && parsed.type !== problemType(c.type)) fail(`type ${String(parsed.type)}, expected ${problemType(c.type)}`);
    if (c.replayed !== undefined && (res.headers.get("idempotent-replayed") === "true") !== c.replayed)
      fail(`Idempotent-Replayed is ${res.headers.get("idempotent-replayed")}`);
    if (c.header && !res.headers.has(c.header)) fail(`no ${c.header} header`);
    const undeclared = undeclaredHeaders(o.document, method, res.url, res.status, res.headers);
    if (undeclared.length) fail(`headers the document does not declare for ${res.status}: ${undeclared.join(", ")}`);
    result.violations += undeclared.length;
    if (c.operation && !prismOwn) result.answers.push({ operation: c.operation, status: res.status, body: parsed });
    o.log(
      `${{ strict: "  ", lenient: "~ ", direct: "> " }[via]}${res.status} ${method} ${c.path.slice(0, 70)} (${c.name})${violations.length ? ` [${violations.length} violation(s) reported]` : ""}`,
    );
    return { status: res.status, body: parsed, headers: res.headers };
  }
  const id = async (c: Case) => String((await send(c)).body.id);
  const missing = "nothing_here";
  const EUR = (amount: string, destination = "acct_test_123") => ({ amount, currency: "EUR", destination });

  await send({ name: "health", path: "/health", token: null, status: 200, operation: "health" });
  await send({ name: "the catalog", path: "/v1/products", status: 200, operation: "catalog_list" });

  // Payments: a charge and its replay, an authorisation captured, one voided, the actions refused.
  const payment = { path: "/v1/payments", body: EUR("25.00"), key: randomUUID() };
  const paid = await id({ name: "a payment", ...payment, status: 201, replayed: false, operation: "payments_create" });
  await send({ name: "its replay", ...payment, status: 201, replayed: true, operation: "payments_create" });
  await send({ name: "the key for another body", ...payment, body: EUR("26.00"), status: 422, type: "idempotency-key-mismatch" });
  const authorisation = { path: "/v1/payments", body: { ...EUR("10.00"), capture: false }, status: 201 };
  const held = await id({ name: "an authorisation", ...authorisation, operation: "payments_create" });
  await send({ name: "captured, body {}", path: `/v1/payments/${held}/capture`, body: {}, status: 200, operation: "payments_capture" });
  await send({ name: "voided after capture", path: `/v1/payments/${held}/void`, body: "", status: 422, type: "payment-captured" });
  const voided = await id({ name: "a second authorisation", ...authorisation });
  await send({ name: "voided, empty body", path: `/v1/payments/${voided}/void`, body: "", status: 200, operation: "payments_void" });
  await send({ name: "captured after void", path: `/v1/payments/${voided}/capture`, body: {}, status: 422, type: "payment-canceled" });
  const failed = await id({ name: "a third authorisation", ...authorisation });
  const refund = (paymentId: string, amount: string) => ({ path: `/v1/payments/${paymentId}/refunds`, body: { amount } });
  await send({ name: "refund of an authorisation", ...refund(failed, "1.00"), status: 422, type: "payment-not-refundable" });
  await send({ name: "a refund", ...refund(paid, "5.00"), status: 201, operation: "payments_refund" });
  await send({ name: "a refund over the captured amount", ...refund(paid, "100.00"), status: 422, type: "refund-exceeds-captured" });
  await send({ name: "the payment", path: `/v1/payments/${paid}`, status: 200, operation: "payments_get" });
  await send({ name: "its provider calls", path: `/v1/payments/${paid}/attempts`, status: 200, operation: "payments_attempts" });
  await send({ name: "payments, newest first", path: "/v1/payments?limit=5", status: 200, operation: "payments_list" });
  const declined = {
    path: "/v1/payments",
    body: EUR("3.00", "acct_test_decline"),
    key: randomUUID(),
    status: 402,
    type: "payment-declined",
  } as const;
  await send({ name: "a declined payment", ...declined, replayed: false });
  await send({ name: "the decline replayed", ...declined, replayed: true, operation: "payments_create" });

  // In flight: the provider is slower than the bounded wait, so the second request with the key is told to retry.
  const slow = { path: "/v1/payments", body: EUR("4.00", "acct_test_slow"), key: randomUUID() };
  // Both awaited together: a failure of either is this run's, never an unhandled rejection that skips the clean-up.
  await Promise.all([
    send({ name: "a slow payment", ...slow, status: 201 }),
    sleep(500).then(() =>
      send({
        name: "the same key while it runs",
        ...slow,
        status: 409,
        type: "idempotency-key-in-progress",
        header: "retry-after",
        operation: "payments_create",
      }),
    ),
  ]);

  // Accounts: a deposit, withdrawals, the refusals.
  const account = await id({
    name: "an account",
    path: "/v1/accounts",
    body: { currency: "EUR" },
    status: 201,
    operation: "accounts_create",
  });
  const move = (kind: "deposits" | "withdrawals", amount: string, currency = "EUR") => ({
    path: `/v1/accounts/${account}/${kind}`,
    body: { amount, currency },
  });
  const deposit = await id({ name: "a deposit", ...move("deposits", "20.00"), status: 201, operation: "accounts_deposit" });
  const withdrawal = await id({ name: "a withdrawal", ...move("withdrawals", "5.00"), status: 201, operation: "accounts_withdraw" });
  await send({
    name: "an overdraft",
    ...move("withdrawals", "100.00"),
    status: 422,
    type: "insufficient-funds",
    operation: "accounts_withdraw",
  });
  await send({ name: "another currency", ...move("deposits", "1.00", "USD"), status: 422, type: "currency-mismatch" });
  await send({ name: "the account", path: `/v1/accounts/${account}`, status: 200, operation: "accounts_get" });
  await send({ name: "its movements", path: `/v1/accounts/${account}/movements?limit=5`, status: 200, operation: "accounts_movements" });
  await send({ name: "the deposit", path: `/v1/deposits/${deposit}`, status: 200, operation: "accounts_getDeposit" });
  await send({ name: "the withdrawal", path: `/v1/withdrawals/${withdrawal}`, status: 200, operation: "accounts_getWithdrawal" });

  // Coupons and orders.
  const code = `C${randomUUID().slice(0, 8)}`;
  await send({ name: "a coupon", path: "/v1/coupons", body: { code, percentOff: 10 }, status: 201, operation: "coupons_create" });
  await send({ name: "the coupon's code again", path: "/v1/coupons", body: { code, percentOff: 20 }, status: 422, type: "coupon-exists" });
  const mugs = (quantity: number, more: object = {}) => ({ path: "/v1/orders", body: { items: [{ sku: "mug-once", quantity }], ...more } });
  const orderKey = randomUUID();
  const order = await id({ name: "an order", ...mugs(2, { couponCode: code }), key: orderKey, status: 201, operation: "orders_create" });
  await send({ name: "the redeemed coupon again", ...mugs(1, { couponCode: code }), status: 422, type: "coupon-redeemed" });
  await send({ name: "an unknown coupon", ...mugs(1, { couponCode: "NO_SUCH_COUPON" }), status: 422, type: "coupon-unknown" });
  await send({ name: "a declined order", ...mugs(1, { destination: "acct_test_decline" }), status: 402, type: "payment-declined" });
  await send({
    name: "an unknown SKU",
    path: "/v1/orders",
    body: { items: [{ sku: "no-such-sku", quantity: 1 }] },
    status: 400,
    type: "validation",
  });
  await send({ name: "the order", path: `/v1/orders/${order}`, status: 200, operation: "orders_get" });
  const ledger = { via: "lenient", prismMisreads: "query.filter", status: 200, operation: "ledger_list" } as const;
  await send({ name: "the ledger of a key", path: `/v1/ledger?idempotencyKey=${orderKey}`, ...ledger });

  // The provider's webhook: signed, redelivered, forged.
  const eventId = `evt_${randomUUID().replaceAll("-", "")}`;
  const event = JSON.stringify({ id: eventId, type: "charge.refunded", data: { paymentId: paid, amount: "1.00" } });
  const webhook = { path: "/v1/webhooks/psp", body: event, token: null, operation: "webhooks_psp" };
  const signed = { ...webhook, headers: { "psp-signature": createHmac("sha256", o.webhookSecret).update(event, "utf8").digest("hex") } };
  await send({ name: "a signed event", ...signed, status: 200 });
  await send({ name: "the event again", ...signed, status: 200 });
  await send({
    name: "a forged event",
    ...webhook,
    headers: { "psp-signature": "0".repeat(64) },
    status: 401,
    type: "invalid-signature",
    header: "www-authenticate",
  });
  await send({ name: "the ledger of an event", path: `/v1/ledger?eventId=${eventId}`, ...ledger });

  // 404 on every route with an id.
  for (const path of [
    `/v1/payments/${missing}`,
    `/v1/payments/${missing}/attempts`,
    `/v1/accounts/${missing}`,
    `/v1/accounts/${missing}/movements`,
    `/v1/deposits/${missing}`,
    `/v1/withdrawals/${missing}`,
    `/v1/orders/${missing}`,
  ])
    await send({ name: "an unknown id", path, status: 404, type: "not-found" });
  for (const [path, body] of [
    [`/v1/payments/${missing}/capture`, {}],
    [`/v1/payments/${missing}/void`, {}],
    [`/v1/payments/${missing}/refunds`, { amount: "1.00" }],
    [`/v1/accounts/${missing}/deposits`, { amount: "1.00", currency: "EUR" }],
    [`/v1/accounts/${missing}/withdrawals`, { amount: "1.00", currency: "EUR" }],
  ] as const)
    await send({ name: "an unknown id", path, body, status: 404, type: "not-found" });

  // Refusals of requests the document allows in form: an unknown token, a duplicate key the JSON parser hides.
  await send({
    name: "an unknown token",
    path: "/v1/products",
    token: "eo_unknown",
    status: 401,
    type: "unauthorized",
    header: "www-authenticate",
    operation: "catalog_list",
  });
  await send({
    name: "a duplicate JSON key",
    via: "direct",
    operation: "payments_create",
    path: "/v1/payments",
    body: '{"amount":"1.00","amount":"2.00","currency":"EUR","destination":"acct_test_123"}',
    status: 400,
    type: "duplicate-key",
  });

  // Malformed requests: the document must refuse them as the API does.
  const invalid = { status: 400, type: "validation" } as const;
  const malformed: Case[] = [
    { name: "no token", path: "/v1/products", token: null, status: 401, type: "unauthorized", header: "www-authenticate" },
    { name: "no Idempotency-Key", path: "/v1/payments", body: EUR("1.00"), key: null, status: 400, type: "idempotency-key-missing" },
    {
      name: "a key of 300 characters",
      path: "/v1/payments",
      body: EUR("1.00"),
      key: "k".repeat(300),
      status: 400,
      type: "idempotency-key-invalid",
    },
    { name: "a misspelt field", path: "/v1/payments", body: { ...EUR("1.00"), captur: false }, ...invalid },
    { name: "an amount of 0.00", path: "/v1/payments", body: EUR("0.00"), ...invalid },
    { name: "an amount over 1,000,000.00", path: "/v1/payments", body: EUR("1000000.01"), ...invalid },
    { name: "currency ZZZ", path: "/v1/accounts", body: { currency: "ZZZ" }, ...invalid },
    { name: "an id of 65 characters", path: `/v1/payments/${"p".repeat(65)}`, ...invalid },
    { name: "both ledger parameters", path: `/v1/ledger?idempotencyKey=${orderKey}&eventId=${eventId}`, ...invalid },
    { name: "no ledger parameter", path: "/v1/ledger", ...invalid },
    {
      name: "a body over 64 KiB",
      path: "/v1/payments",
      body: EUR("1.00", `acct_${"x".repeat(70_000)}`),
      status: 413,
      type: "body-too-large",
      operation: "payments_create",
    },
    {
      name: "text/plain",
      path: "/v1/payments",
      body: JSON.stringify(EUR("1.00")),
      headers: { "content-type": "text/plain" },
      status: 415,
      type: "unsupported-media-type",
    },
    { name: "DELETE", method: "DELETE", path: "/v1/products", status: 405, type: "method-not-allowed", header: "allow" },
  ];
  for (const c of malformed) await send({ ...c, via: "lenient" });
  return result;
}
