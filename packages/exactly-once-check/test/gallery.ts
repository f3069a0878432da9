/**
 * Test subjects: one small payments API with an Idempotency-Key, correct
 * unless given a flaw. Each flaw is one mistake seen in real
 * implementations; the kit must catch each with exactly the check meant for
 * it. State lives in memory: these are subjects, not an app.
 *
 * Every server's downstream fails one call (a provider blip, the
 * `blipOn`-th execution: the first after the kit's setup requests), so the
 * kit meets one 5xx whose effect is unknown; a correct server does not store
 * it. Work takes `workMs`, so duplicates can arrive while it runs.
 *
 * Besides the flaws, two correct servers of another form: `minimal` (error
 * bodies carry only a `title`, keys are any string up to 255 characters, a
 * quoted key is another key: what RFC 9457 and Stripe allow) and a
 * `--count-url` that counts every credential's payments (`count: "global"`).
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

export const FLAWS = [
  "race",
  "no-fingerprint",
  "byte-fingerprint",
  "generic-duplicate",
  "re-render",
  "shared-keys",
  "cached-5xx",
  "no-in-flight",
  "never-expires",
] as const;
export type Flaw = (typeof FLAWS)[number];

type Payment = { id: string; amount: string; currency: string; destination: string; createdAt: string };
type KeyRecord = { fingerprint: string; createdAt: number; state: "running" | "done"; status?: number; body?: string; payment?: Payment };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A key is its sf-string form's content or the bare value; 1–255 visible ASCII characters. `minimal`: any string up to 255, as sent. */
function parseKey(raw: string, minimal: boolean): string | undefined {
  if (minimal) return raw.length >= 1 && raw.length <= 255 ? raw : undefined;
  const bare = /^"((?:[^"\\]|\\[\\"])*)"$/.exec(raw)?.[1]?.replace(/\\(.)/g, "$1") ?? raw;
  return /^[\x21-\x7e]{1,255}$/.test(bare) ? bare : undefined;
}

/** Key order does not make two payloads different. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object")
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(v);
}

export type GalleryOptions = {
  flaw?: Flaw;
  ttlMs: number;
  workMs?: number;
  blipOn?: number;
  minimal?: boolean;
  count?: "credential" | "global";
};

export async function startGalleryServer(options: GalleryOptions) {
  const { flaw, ttlMs, minimal = false } = options;
  // The kit's setup creates one payment per credential first.
  const blipOn = options.blipOn ?? 3;
  let executions = 0;
  // Long enough that a duplicate sent at 60 % of it still lands inside it on a loaded machine.
  const workMs = options.workMs ?? 250;
  const keys = new Map<string, KeyRecord>();
  const payments = new Map<string, Payment[]>();

  const answer = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    res
      .writeHead(status, { "content-type": status >= 400 && !minimal ? "application/problem+json" : "application/json", ...headers })
      .end(text);
    return text;
  };
  const problem = (res: http.ServerResponse, status: number, type: string, title: string, headers?: Record<string, string>) =>
    answer(res, status, minimal ? { title } : { type: `https://example.test/problems/${type}`, title, status }, headers);
  const render = (p: Payment) => JSON.stringify(flaw === "re-render" ? { ...p, receipt: randomUUID() } : p);

  async function create(req: http.IncomingMessage, res: http.ServerResponse, credential: string, body: string) {
    const raw = req.headers["idempotency-key"];
    if (raw === undefined) return problem(res, 400, "missing-key", "Idempotency-Key is missing");
    const key = parseKey(String(raw), minimal);
    if (key === undefined) return problem(res, 400, "bad-key", "Idempotency-Key is not 1–255 visible ASCII characters");
    let input: Record<string, string>;
    try {
      input = JSON.parse(body) as Record<string, string>;
    } catch {
      return problem(res, 400, "bad-json", "The body is not JSON");
    }
    if (typeof input.amount !== "string") return problem(res, 400, "bad-payment", "amount is required (a decimal string)");
    const scope = flaw === "shared-keys" ? key : `${credential}\n${key}`;
    const fingerprint = flaw === "no-fingerprint" ? "" : flaw === "byte-fingerprint" ? body : canonical(input);
    let existing = keys.get(scope);
    // The race: the lookup and the claim are apart, and a duplicate fits in between.
    if (flaw === "race") await sleep(5);
    if (existing?.state === "done" && flaw !== "never-expires" && Date.now() - existing.createdAt > ttlMs) {
      keys.delete(scope);
      existing = undefined;
    }
    if (existing) {
      if (existing.fingerprint !== fingerprint) return problem(res, 422, "key-mismatch", "The key was used with another payload");
      if (existing.state === "running") {
        if (flaw === "no-in-flight") return answer(res, 500, "Internal Server Error", { "content-type": "text/plain" });
        return problem(res, 409, "in-progress", "A request with this key is in progress", { "retry-after": "1" });
      }
      if (flaw === "generic-duplicate") return problem(res, 409, "duplicate", "Duplicate request");
      if (flaw === "re-render") return answer(res, existing.status!, render(existing.payment!), { "idempotent-replayed": "true" });
      return answer(res, existing.status!, existing.body!, { "idempotent-replayed": "true" });
    }
    const record: KeyRecord = { fingerprint, createdAt: Date.now(), state: "running" };
    keys.set(scope, record);
    await sleep(workMs);
    if (++executions === blipOn) {
      if (flaw === "cached-5xx")
        Object.assign(record, {
          state: "done",
          status: 502,
          body: answer(res, 502, { type: "about:blank", title: "Provider unavailable", status: 502 }),
        });
      else {
        keys.delete(scope);
        problem(res, 502, "provider", "Provider unavailable");
      }
      return;
    }
    const payment: Payment = {
      id: `pay_${randomUUID()}`,
      amount: input.amount!,
      currency: input.currency!,
      destination: input.destination!,
      createdAt: new Date().toISOString(),
    };
    payments.set(credential, [...(payments.get(credential) ?? []), payment]);
    Object.assign(record, { state: "done", status: 201, payment, body: answer(res, 201, render(payment)) });
  }

  const server = http.createServer((req, res) => {
    const credential = req.headers.authorization;
    if (!credential) return void problem(res, 401, "unauthorized", "No credential");
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const counted = options.count === "global" ? [...payments.values()].flat() : (payments.get(credential) ?? []);
      if (req.method === "GET" && req.url === "/payments") return void answer(res, 200, { data: counted });
      if (req.method === "POST" && req.url === "/payments")
        return void create(req, res, credential, Buffer.concat(chunks).toString("utf8"));
      problem(res, 404, "not-found", "Not found");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${base}/payments`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
