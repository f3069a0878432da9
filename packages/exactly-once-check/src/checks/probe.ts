/** What every check shares: the target, the exchanges it records, and the first request of a key taken to its final answer. */
import type { Target } from "../target.js";
import { brief, successful } from "../target.js";
import { FailureKind, type Answer, type Exchange, type Finding, type Header, type SentRequest } from "../types.js";

/** A check's own conclusion: passed (no findings) with its summary, failed with its findings, or skipped. */
export type Outcome = { findings: Finding[]; summary: string } | { skip: string };

export const unsafe = (text: string): Finding => ({ kind: FailureKind.Unsafe, text });
export const deviation = (text: string): Finding => ({ kind: FailureKind.Deviation, text });

/** The outcome of a check that found `findings`, or passed with `passed` as its summary. */
export const verdict = (findings: Finding[], passed: string): Outcome => ({
  findings,
  summary: findings.length ? findings.map((f) => f.text).join("; ") : passed,
});
/** A check that cannot go on, for `finding`. */
export const failed = (finding: Finding): Outcome => verdict([finding], "");

/** 409s and 5xx answers on the way to a key's final answer. */
const SETTLE_ATTEMPTS = 4;
const MAX_WAIT_MS = 2000;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

  async count(label: string, headers?: Header[]): Promise<number | undefined> {
    const c = await this.target.count(label, headers);
    if (c) this.exchanges.push(c.exchange);
    return c?.value;
  }

  /**
   * Sends a key's first request until it has a final answer, as a client
   * would: a 409 is waited out (Retry-After, capped), a 5xx retried with the
   * same key. A 5xx that comes back the same (marked as a replay, or byte for
   * byte) is the key's stored answer: final where the profile allows storing
   * one, a deviation where it does not.
   */
  async settle(label: string, key: string, body?: string, headers?: Header[]): Promise<{ final: Answer } | { problem: Finding }> {
    let previous: Answer | undefined;
    for (let attempt = 1; attempt <= SETTLE_ATTEMPTS; attempt++) {
      const x = await this.send(attempt === 1 ? label : `${label} (attempt ${attempt})`, this.target.postKey(key, body, headers));
      const a = x.answer;
      if (!a) return { problem: deviation(`${label}: ${brief(x)}`) };
      if (a.status >= 500) {
        const stored = this.target.marked(a) || (previous?.status === a.status && previous.body === a.body && attempt > 2);
        if (stored) {
          if (this.profile.storesServerErrors) return { final: a };
          return {
            problem: deviation(
              `${label}: a ${a.status} came back as the key's stored answer${this.target.marked(a) ? " (marked as a replay)" : `, byte for byte on ${attempt} attempts`}; a 5xx whose effect is unknown must not be final`,
            ),
          };
        }
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
    if (previous && previous.status >= 500 && this.profile.storesServerErrors) return { final: previous };
    return { problem: deviation(`${label}: no final answer after ${SETTLE_ATTEMPTS} attempts (last ${previous?.status})`) };
  }

  /**
   * A key whose first request ended in a success, for checks that build on
   * one: `settle`, and where the key ended with a stored 5xx (a profile that
   * allows it), once more with a fresh key. Returns the key with its answer.
   */
  async establish(
    label: string,
    key: string,
    body?: string,
    headers?: Header[],
  ): Promise<{ key: string; final: Answer } | { problem: Finding }> {
    let s = await this.settle(label, key, body, headers);
    if (!("problem" in s) && s.final.status >= 500) {
      this.note(`${label}: the key kept its ${s.final.status} (the profile allows storing one); a fresh key instead`);
      key = this.target.newKey();
      s = await this.settle(`${label} (a fresh key)`, key, body, headers);
    }
    if ("problem" in s) return s;
    if (!successful(s.final))
      return { problem: deviation(`${label} was answered ${s.final.status}, not a success, after the first requests succeeded`) };
    return { key, final: s.final };
  }
}
