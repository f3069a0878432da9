/** The endpoint under test: how its requests are built and how its answers are read. */
import { randomUUID } from "node:crypto";
import { Clock, send, sendTogether } from "./http.js";
import type { Profile } from "./profiles.js";
import { UsageError, type Answer, type CheckOptions, type Exchange, type Header, type SentRequest } from "./types.js";

export const successful = (a: Answer | undefined): boolean => a !== undefined && a.status >= 200 && a.status < 300;
export const sameAnswer = (a: Answer | undefined, b: Answer | undefined) =>
  a !== undefined && b !== undefined && a.status === b.status && a.body === b.body;
export const brief = (x: Exchange) =>
  x.answer ? `${x.answer.status} in ${Math.round(x.answeredMs - x.sentMs)} ms` : `no answer (${x.error})`;

function mergeHeaders(base: Header[], over: Header[]): Header[] {
  const replaced = new Set(over.map(([n]) => n.toLowerCase()));
  return [...base.filter(([n]) => !replaced.has(n.toLowerCase())), ...over];
}

/**
 * A payload that differs in one field: the first number (or decimal string)
 * goes up by one, else the first string gets a suffix. Kept valid on purpose,
 * so that a server which ignores the difference would succeed, not refuse.
 */
export function derivePayload(data: string): string {
  const value: unknown = JSON.parse(data);
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new UsageError("--data is not a JSON object: give --data-alt");
  const entries = Object.entries(value as Record<string, unknown>);
  const decimal = /^\d+(\.\d+)?$/;
  const numeric = entries.find(([, v]) => typeof v === "number" || (typeof v === "string" && decimal.test(v)));
  if (numeric) {
    const [k, v] = numeric;
    if (typeof v === "number") return JSON.stringify({ ...value, [k]: v + 1 });
    const [whole, fraction] = (v as string).split(".");
    return JSON.stringify({ ...value, [k]: [String(BigInt(whole!) + 1n), ...(fraction === undefined ? [] : [fraction])].join(".") });
  }
  const text = entries.find(([, v]) => typeof v === "string");
  if (text) return JSON.stringify({ ...value, [text[0]]: `${text[1] as string}-alt` });
  throw new UsageError("--data has no number or string field to change: give --data-alt");
}

/**
 * The same JSON object with its fields in reverse order and other
 * whitespace: the same request by its meaning, other bytes. Undefined when
 * reordering changes nothing (fewer than two fields).
 */
export function reordered(data: string): string | undefined {
  const value: unknown = JSON.parse(data);
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length < 2) return undefined;
  return `{ ${entries
    .reverse()
    .map(([k, v]) => `${JSON.stringify(k)} : ${JSON.stringify(v)}`)
    .join(" ,\n  ")} }`;
}

/** Reads a count: a number, an array, or an object with a `count`/`total` number or a `data` array. */
export function readCount(body: string): number | undefined {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof v === "number") return v;
  if (Array.isArray(v)) return v.length;
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    for (const k of ["count", "total"]) if (typeof o[k] === "number") return o[k];
    if (Array.isArray(o.data)) return o.data.length;
  }
  return undefined;
}

export class Target {
  readonly clock = new Clock();
  readonly alt: string;
  constructor(
    readonly options: CheckOptions,
    readonly profile: Profile,
  ) {
    this.alt = options.dataAlt ?? derivePayload(options.data);
  }

  /** A key no earlier run used. */
  newKey(): string {
    return `eoc-${randomUUID()}`;
  }

  /** The POST; `key` is the header's raw value (undefined: no header), `headers` replaces the configured ones by name. */
  post(key: string | undefined, body = this.options.data, headers: Header[] = []): SentRequest {
    const all = mergeHeaders([["Content-Type", "application/json"], ["Accept", "application/json"], ...this.options.headers], headers);
    if (key !== undefined) all.push(["Idempotency-Key", key]);
    return { method: "POST", url: this.options.url, headers: Object.fromEntries(all), body };
  }

  /** The POST with a fresh-style key in the profile's wire form. */
  postKey(key: string, body?: string, headers?: Header[]): SentRequest {
    return this.post(this.profile.formatKey(key), body, headers);
  }

  send(label: string, request: SentRequest): Promise<Exchange> {
    return send(this.clock, label, request, this.options.timeoutMs);
  }

  sendTogether(items: { label: string; request: SentRequest }[]): Promise<Exchange[]> {
    return sendTogether(this.clock, items, this.options.timeoutMs);
  }

  /** The count before/after (`headers` replace the configured ones by name), or undefined without --count-url. */
  async count(label: string, over: Header[] = []): Promise<{ value: number; exchange: Exchange } | undefined> {
    if (!this.options.countUrl) return undefined;
    const headers = Object.fromEntries(mergeHeaders(mergeHeaders([["Accept", "application/json"]], this.options.headers), over));
    const exchange = await this.send(label, { method: "GET", url: this.options.countUrl, headers });
    const value = exchange.answer && successful(exchange.answer) ? readCount(exchange.answer.body) : undefined;
    if (value === undefined) throw new CountError(`--count-url gave no count (${brief(exchange)})`, exchange);
    return { value, exchange };
  }

  /** Whether the answer carries the profile's replay marker. */
  marked(a: Answer | undefined): boolean {
    const m = this.profile.replayMarker;
    return m !== undefined && a !== undefined && a.headers[m[0]]?.toLowerCase() === m[1];
  }

  /** What is wrong with an error answer's form under the profile (undefined: nothing). */
  errorFormProblem(a: Answer): string | undefined {
    let json: unknown;
    try {
      json = JSON.parse(a.body);
    } catch {
      json = undefined;
    }
    const o = json && typeof json === "object" ? (json as Record<string, unknown>) : undefined;
    if (this.profile.errorBodies === "any") return undefined;
    if (this.options.trpc) return o && typeof o.error === "object" ? undefined : "not a tRPC error (a JSON `error` object)";
    const problem = (a.headers["content-type"] ?? "").startsWith("application/problem+json");
    if (this.profile.errorBodies === "problem+json") {
      if (!problem) return `Content-Type ${a.headers["content-type"] ?? "(none)"}, not application/problem+json`;
      if (!o || typeof o.type !== "string" || typeof o.title !== "string" || o.status !== a.status)
        return "problem+json without type, title and a status equal to the HTTP status";
      return undefined;
    }
    if (problem || /rel="?describedby/.test(a.headers.link ?? "") || (o && typeof o.error === "object")) return undefined;
    return "neither problem+json, a Link to documentation, nor a JSON `error` object";
  }
}

export class CountError extends Error {
  override name = "CountError";
  constructor(
    message: string,
    readonly exchange: Exchange,
  ) {
    super(message);
  }
}
