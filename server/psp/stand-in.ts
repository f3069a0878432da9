/**
 * A fake payment provider (PSP) as a plain `node:http` server, so the app
 * talks to it over a real network hop with real timeouts. State lives in
 * memory (see `ledger.ts`), and in a file when given one (`journal.ts`); the
 * routes are documented in `README.md`.
 *
 * Every POST that moves money requires an `Idempotency-Key`, the app's
 * downstream key: a repeat answers the original result, a concurrent
 * duplicate awaits it, and the same key with a different request is a `422`.
 * Requests are validated before the key is looked at, so a malformed request
 * never uses a key up.
 *
 * Its HTTP edge answers only loopback names and `allowedHosts` in `Host`
 * (421 otherwise: DNS rebinding, see server/edge/hosts.ts). The control
 * route `/webhooks/send` takes only JSON signed with the webhook secret
 * (so a cross-site form cannot drive it) and delivers only to one of the
 * `webhookUrls` it was started with.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import path from "node:path";
import type { AddressInfo } from "node:net";
import type { z } from "zod";
import { hostAllowed } from "../edge/hosts";
import { jsonShape, MAX_JSON_DEPTH } from "../json-shape";
import { fingerprint } from "@exactly-once/trpc";
import { continueProviderTrace } from "../observability/psp";
import { openJournal } from "./journal";
import { KeyMismatchError, Ledger, errorReply, reply, type Reply } from "./ledger";
import { chargeRequestSchema, emptyRequestSchema, refundRequestSchema, webhookSendSchema } from "./schemas";

export type PspStandInOptions = {
  /** Where the stand-in keeps its records across restarts (journal.ts); unset, in memory only. */
  dataFile?: string;
  slowMs: number;
  webhookSecret: string;
  /** The only URLs `/webhooks/send` delivers to; none: it delivers nowhere. */
  webhookUrls?: readonly string[];
  /** Host names answered besides the loopback ones. */
  allowedHosts?: readonly string[];
};
export type PspStandIn = { server: http.Server; ledger: Ledger };
export type RunningPspStandIn = { url: string; port: number; server: http.Server; close(): Promise<void> };

const MAX_BODY_BYTES = 1024 * 1024;
const WEBHOOK_TIMEOUT_MS = 10_000;
// Same rule as the app's own keys: 1–255 visible ASCII characters.
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** Hex HMAC-SHA256 of the exact body bytes; receivers must verify before parsing. */
export function signWebhook(body: string, secret: string): string {
  return createHmac("sha256", secret).update(body, "utf8").digest("hex");
}

class BadRequest extends Error {
  override readonly name = "BadRequest";
  constructor(
    readonly reply: Reply,
    options?: { cause?: unknown },
  ) {
    super(reply.body, options);
  }
}

type Request = { method: string; segments: string[]; key: string | undefined; raw: string; headers: http.IncomingHttpHeaders };

/** The header a control request is signed in: the same HMAC as a webhook's, over the request body. */
export const CONTROL_SIGNATURE_HEADER = "psp-signature";

/**
 * Which records a stand-in keeps, as its /health tells: a digest of the
 * records file's path (the path itself is nobody's business over HTTP).
 * Two stand-ins with the same digest hold the charges of the same database.
 */
export const recordsDigest = (dataFile: string) => createHash("sha256").update(path.resolve(dataFile)).digest("hex").slice(0, 16);

export function createPspStandIn(options: PspStandInOptions): PspStandIn {
  const ledger = new Ledger(options.slowMs, options.dataFile === undefined ? undefined : openJournal(options.dataFile));
  const health = { status: "ok", ...(options.dataFile === undefined ? {} : { records: recordsDigest(options.dataFile) }) };

  async function route(request: Request): Promise<Reply> {
    const { method, segments } = request;
    const [first, id, action, ...rest] = segments;
    if (method === "GET" && first === "health" && segments.length === 1) return reply(200, health);
    if (first === "charges" && rest.length === 0) {
      if (method === "GET" && id === undefined) return reply(200, { data: ledger.list() });
      if (method === "GET" && action === undefined && id !== undefined) {
        const charge = ledger.get(id);
        return charge ? reply(200, charge) : errorReply(404, "resource_missing", `No charge with id ${id}.`);
      }
      if (method === "POST" && id === undefined) {
        const body = parse(request, chargeRequestSchema);
        return idempotent(request, body, (key) => ledger.charge(body, key));
      }
      if (method === "POST" && id !== undefined && (action === "capture" || action === "void")) {
        const body = parse(request, emptyRequestSchema);
        return idempotent(request, body, () => (action === "capture" ? ledger.capture(id) : ledger.void(id)));
      }
      if (method === "POST" && id !== undefined && action === "refunds") {
        const body = parse(request, refundRequestSchema);
        return idempotent(request, body, () => ledger.refund(id, body.amount));
      }
    }
    if (method === "GET" && first === "keys" && id !== undefined && action === undefined) {
      const found = ledger.lookup(id);
      return found ? reply(200, { key: id, ...found }) : errorReply(404, "unknown_key", "No request was made with this Idempotency-Key.");
    }
    if (method === "POST" && first === "webhooks" && id === "send" && action === undefined) {
      return sendWebhook(request, options.webhookSecret, options.webhookUrls ?? []);
    }
    return errorReply(404, "not_found", `No route for ${method} /${segments.join("/")}.`);
  }

  function idempotent(request: Request, body: unknown, work: (key: string) => Promise<Reply>): Promise<Reply> {
    const { key } = request;
    if (key === undefined) throw new BadRequest(errorReply(400, "missing_idempotency_key", "Idempotency-Key header is required."));
    if (!KEY_PATTERN.test(key)) {
      throw new BadRequest(errorReply(400, "invalid_idempotency_key", "Idempotency-Key must be 1-255 visible ASCII characters."));
    }
    const print = fingerprint(`${request.method} /${request.segments.join("/")}`, body).hash;
    return ledger.once(key, print, () => work(key));
  }

  const server = http.createServer((req, res) => {
    const answered = hostAllowed(req.headers.host, options.allowedHosts ?? [])
      ? continueProviderTrace(req.method ?? "GET", req.url ?? "/", req.headers, () => handle(req, route))
      : Promise.resolve(errorReply(421, "misdirected_request", "This provider does not answer for that host name."));
    void answered.then((answer) => {
      const headers: http.OutgoingHttpHeaders = {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(answer.body),
      };
      if (answer.replayed) headers["idempotent-replayed"] = "true";
      // The caller may have given up (a client timeout); writing to its closed socket is then a no-op.
      res.writeHead(answer.status, headers).end(answer.body);
    });
  });
  return { server, ledger };
}

async function handle(req: http.IncomingMessage, route: (request: Request) => Promise<Reply>): Promise<Reply> {
  try {
    const url = new URL(req.url ?? "/", "http://stand-in");
    const segments = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
    const header = req.headers["idempotency-key"];
    const key = Array.isArray(header) ? header[0] : header;
    const raw = await readBody(req);
    return await route({ method: req.method ?? "GET", segments, key, raw, headers: req.headers });
  } catch (error) {
    if (error instanceof BadRequest) return error.reply;
    if (error instanceof KeyMismatchError) return errorReply(422, "idempotency_key_mismatch", error.message);
    if (error instanceof URIError) return errorReply(400, "invalid_request", "The path is not valid percent-encoding.");
    return errorReply(500, "provider_error", "The provider failed to process the request.");
  }
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new BadRequest(errorReply(413, "body_too_large", "The body exceeds 1 MiB."));
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function parseJson(raw: string): unknown {
  // An empty body is an empty object, so `capture` and `void` need no body at all.
  if (raw.trim() === "") return {};
  // Checked before parsing: the webhook event it relays is stringified again, which recurses.
  if (jsonShape(raw).tooDeep)
    throw new BadRequest(errorReply(400, "invalid_json", `The body nests more than ${MAX_JSON_DEPTH} levels deep.`));
  try {
    return JSON.parse(raw);
  } catch (cause) {
    throw new BadRequest(errorReply(400, "invalid_json", "The body is not valid JSON."), { cause });
  }
}

function parse<S extends z.ZodType>(request: Request, schema: S): z.output<S> {
  return validate(parseJson(request.raw), schema);
}

function validate<S extends z.ZodType>(value: unknown, schema: S): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue?.path.join(".") || "(body)";
  throw new BadRequest(
    reply(400, { error: { type: "invalid_request", message: `${field}: ${issue?.message ?? "invalid"}`, param: field } }),
  );
}

/** A control request: JSON, and signed with the webhook secret by someone who holds it (the app). */
function checkSigned(request: Request, secret: string): void {
  const type = request.headers["content-type"]?.split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json")
    throw new BadRequest(errorReply(415, "unsupported_media_type", "Control requests are sent as application/json."));
  const given = request.headers[CONTROL_SIGNATURE_HEADER];
  const expected = signWebhook(request.raw, secret);
  if (typeof given !== "string" || given.length !== expected.length || !timingSafeEqual(Buffer.from(given), Buffer.from(expected))) {
    throw new BadRequest(
      errorReply(401, "invalid_signature", `The ${CONTROL_SIGNATURE_HEADER} header is not the HMAC-SHA256 of this body.`),
    );
  }
}

async function sendWebhook(request: Request, secret: string, targets: readonly string[]): Promise<Reply> {
  checkSigned(request, secret);
  const raw = parseJson(request.raw);
  const { url } = validate(raw, webhookSendSchema);
  if (!targets.includes(url))
    throw new BadRequest(errorReply(400, "unknown_webhook_url", "The provider delivers webhooks only to the URLs it was started with."));
  // The event as the caller wrote it (zod's output would reorder keys), signed
  // and sent from one string so the receiver checks exactly the bytes it got.
  const body = JSON.stringify((raw as { event: unknown }).event);
  try {
    const answer = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "psp-signature": signWebhook(body, secret) },
      body,
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
    });
    await answer.arrayBuffer();
    return reply(200, { status: answer.status });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return errorReply(502, "delivery_failed", `Could not deliver to ${url}: ${message}`);
  }
}

export async function startPspStandIn(options: PspStandInOptions & { port: number; host?: string }): Promise<RunningPspStandIn> {
  const host = options.host ?? "127.0.0.1";
  const { server } = createPspStandIn(options);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    server,
    close() {
      closed ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // Keep-alive sockets and answers still waiting on a slow charge would hold close() open.
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
