/** What every check shares: the target, the exchanges it records, and the first request of a key taken to its final answer. */
import type { Target } from "../target";
import { brief, successful } from "../target";
import type { Answer, Exchange, Header, SentRequest } from "../types";

/** A check's own conclusion. */
export type Outcome = { pass: boolean; summary: string; details?: string[] } | { skip: string };

/** 409s and 5xx answers on the way to a key's final answer. */
const SETTLE_ATTEMPTS = 4;
const MAX_WAIT_MS = 2000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Probe {
  readonly exchanges: Exchange[] = [];
  readonly details: string[] = [];
  constructor(readonly target: Target) {}

  get profile() {
    return this.target.profile;
  }

  note(line: string): void {
    this.details.push(line);
  }

  async send(label: string, request: SentRequest): Promise<Exchange> {
    const x = await this.target.send(label, request);
    this.exchanges.push(x);
    return x;
  }

  async sendTogether(items: { label: string; request: SentRequest }[]): Promise<Exchange[]> {
    const xs = await this.target.sendTogether(items);
    this.exchanges.push(...xs);
    return xs;
  }

  async count(label: string): Promise<number | undefined> {
    const c = await this.target.count(label);
    if (c) this.exchanges.push(c.exchange);
    return c?.value;
  }

  /**
   * Sends a key's first request until it has a final answer: a 409 is waited
   * out (Retry-After, capped), a 5xx retried where the profile does not store
   * it. Returns the final answer, or why there is none.
   */
  async settle(label: string, key: string, body?: string, headers?: Header[]): Promise<{ final: Answer } | { problem: string }> {
    let previous: Answer | undefined;
    for (let attempt = 1; attempt <= SETTLE_ATTEMPTS; attempt++) {
      const x = await this.send(attempt === 1 ? label : `${label} (attempt ${attempt})`, this.target.postKey(key, body, headers));
      const a = x.answer;
      if (!a) return { problem: `${label}: ${brief(x)}` };
      if (a.status >= 500 && !this.profile.storesServerErrors) {
        if (this.target.marked(a)) return { problem: `${label}: a ${a.status} came back as the key's stored answer (marked as a replay); a 5xx whose effect is unknown must not be final` };
        if (previous?.status === a.status && previous.body === a.body && attempt > 2)
          return { problem: `${label}: the same ${a.status}, byte for byte, on ${attempt} attempts: stored as the key's final answer, or the server never recovers` };
        previous = a;
        this.note(`${label}: ${a.status} on attempt ${attempt}, not final: retried with the same key`);
        continue;
      }
      if (a.status === 409) {
        const wait = Math.min(MAX_WAIT_MS, Number(a.headers["retry-after"] ?? "0.2") * 1000 || 200);
        this.note(`${label}: 409 on attempt ${attempt}, retried after ${wait} ms`);
        await sleep(wait);
        previous = a;
        continue;
      }
      return { final: a };
    }
    return { problem: `${label}: no final answer after ${SETTLE_ATTEMPTS} attempts (last ${previous?.status})` };
  }

  /** `settle`, and the final answer must be a success, for checks that build on one. */
  async establish(label: string, key: string, body?: string, headers?: Header[]): Promise<{ final: Answer } | { problem: string }> {
    const s = await this.settle(label, key, body, headers);
    if ("problem" in s) return s;
    if (!successful(s.final)) return { problem: `${label} was answered ${s.final.status}, not a success: the kit needs a --data (and -H) the server accepts` };
    return s;
  }
}
