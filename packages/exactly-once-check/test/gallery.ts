/**
 * Test subjects: one small payments API with an Idempotency-Key, correct
 * unless given a flaw. Each flaw is one mistake seen in real
 * implementations; the kit must catch each with exactly the check meant for
 * it. State lives in memory: these are subjects, not an app.
 *
 * Every server's downstream fails its first call (a provider blip), so the
 * kit meets one 5xx whose effect is unknown; a correct server does not store
 * it. Work takes `workMs`, so duplicates can arrive while it runs.
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

export const FLAWS = ["race", "no-fingerprint", "generic-duplicate", "re-render", "shared-keys", "cached-5xx", "no-in-flight", "never-expires"] as const;
export type Flaw = (typeof FLAWS)[number];

type Payment = { id: string; amount: string; currency: string; destination: string; createdAt: string };
type KeyRecord = { fingerprint: string; createdAt: number; state: "running" | "done"; status?: number; body?: string; payment?: Payment };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A key is its sf-string form's content or the bare value; 1–255 visible ASCII characters. */
function parseKey(raw: string): string | undefined {
  const bare = /^"((?:[^"\\]|\\[\\"])*)"$/.exec(raw)?.[1]?.replace(/\\(.)/g, "$1") ?? raw;
  return /^[\x21-\x7e]{1,255}$/.test(bare) ? bare : undefined;
}

/** Key order does not make two payloads different. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(",")}}`;
  return JSON.stringify(v);
}

export async function startGalleryServer(options: { flaw?: Flaw; ttlMs: number; workMs?: number }) {
  const { flaw, ttlMs } = options;
  // Long enough that a duplicate sent at 60 % of it still lands inside it on a loaded machine.
  const workMs = options.workMs ?? 250;
  const keys = new Map<string, KeyRecord>();
  const payments = new Map<string, Payment[]>();
  let blipped = false;

  const answer = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    res.writeHead(status, { "content-type": status >= 400 ? "application/problem+json" : "application/json", ...headers }).end(text);
    return text;
  };
  const problem = (res: http.ServerResponse, status: number, type: string, title: string, headers?: Record<string, string>) =>
    answer(res, status, { type: `https://example.test/problems/${type}`, title, status }, headers);
  const render = (p: Payment) => JSON.stringify(flaw === "re-render" ? { ...p, receipt: randomUUID() } : p);

  async function create(req: http.IncomingMessage, res: http.ServerResponse, credential: string, body: string) {
    const raw = req.headers["idempotency-key"];
    if (raw === undefined) return problem(res, 400, "missing-key", "Idempotency-Key is missing");
    const key = parseKey(String(raw));
    if (key === undefined) return problem(res, 400, "bad-key", "Idempotency-Key is not 1–255 visible ASCII characters");
    let input: Record<string, string>;
    try {
      input = JSON.parse(body) as Record<string, string>;
    } catch {
      return problem(res, 400, "bad-json", "The body is not JSON");
    }
    const scope = flaw === "shared-keys" ? key : `${credential}\n${key}`;
    const fingerprint = flaw === "no-fingerprint" ? "" : canonical(input);
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
    if (!blipped) {
      blipped = true;
      if (flaw === "cached-5xx") Object.assign(record, { state: "done", status: 502, body: answer(res, 502, { type: "about:blank", title: "Provider unavailable", status: 502 }) });
      else {
        keys.delete(scope);
        problem(res, 502, "provider", "Provider unavailable");
      }
      return;
    }
    const payment: Payment = { id: `pay_${randomUUID()}`, amount: input.amount!, currency: input.currency!, destination: input.destination!, createdAt: new Date().toISOString() };
    payments.set(credential, [...(payments.get(credential) ?? []), payment]);
    Object.assign(record, { state: "done", status: 201, payment, body: answer(res, 201, render(payment)) });
  }

  const server = http.createServer((req, res) => {
    const credential = req.headers.authorization;
    if (!credential) return void problem(res, 401, "unauthorized", "No credential");
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method === "GET" && req.url === "/payments") return void answer(res, 200, { data: payments.get(credential) ?? [] });
      if (req.method === "POST" && req.url === "/payments") return void create(req, res, credential, Buffer.concat(chunks).toString("utf8"));
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
