/**
 * The checks that need no overlap: replay, mismatch, missing-key,
 * key-format, scope and expiry. Each uses keys of its own.
 */
import { sfString } from "../profiles";
import { brief, sameAnswer, successful } from "../target";
import type { Answer } from "../types";
import type { Outcome, Probe } from "./probe";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const verdict = (problems: string[], passed: string): Outcome => (problems.length ? { pass: false, summary: problems.join("; ") } : { pass: true, summary: passed });

/** Where two bodies part, for the evidence. */
export function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const cut = (s: string) => JSON.stringify(s.slice(Math.max(0, i - 12), i + 24));
  return `from byte ${i}: ${cut(a)} vs ${cut(b)}`;
}

function countChange(before: number | undefined, after: number | undefined, expected: number, what: string): string[] {
  if (before === undefined || after === undefined || after - before === expected) return [];
  return [`--count-url went ${before} → ${after} ${what}, expected ${expected === 0 ? "no change" : `+${expected}`}`];
}

export async function replay(p: Probe): Promise<Outcome> {
  const before = await p.count("count before");
  const key = p.target.newKey();
  const first = await p.establish("first request", key);
  if ("problem" in first) return { pass: false, summary: first.problem };
  const x = await p.send("same key, same payload", p.target.postKey(key));
  const after = await p.count("count after");
  const a = x.answer;
  if (!a) return { pass: false, summary: `the replay: ${brief(x)}` };
  const problems: string[] = [];
  if (a.status !== first.final.status) problems.push(`the replay answered ${a.status}, the first ${first.final.status}`);
  else if (a.body !== first.final.body) problems.push(`the replay's body differs from the first answer's ${firstDifference(first.final.body, a.body)}`);
  const marker = p.profile.replayMarker;
  if (marker && !p.target.marked(a)) problems.push(`the replay lacks ${marker[0]}: ${marker[1]}`);
  if (marker && p.target.marked(first.final)) problems.push(`the first answer is marked ${marker[0]}: ${marker[1]}`);
  problems.push(...countChange(before, after, 1, "for a request and its replay"));
  return verdict(problems, `${a.status} and ${Buffer.byteLength(a.body)} bytes identical${marker ? `, ${marker[0]}: ${marker[1]}` : ""}`);
}

export async function mismatch(p: Probe): Promise<Outcome> {
  const key = p.target.newKey();
  const first = await p.establish("first request", key);
  if ("problem" in first) return { pass: false, summary: first.problem };
  const before = await p.count("count before");
  const x = await p.send("same key, other payload", p.target.postKey(key, p.target.alt));
  const after = await p.count("count after");
  p.note(`other payload: ${p.target.alt}`);
  const a = x.answer;
  if (!a) return { pass: false, summary: `the other payload: ${brief(x)}` };
  const problems: string[] = [];
  if (successful(a)) problems.push(`a silent success (${a.status}${sameAnswer(a, first.final) ? ", the first payload's stored answer" : ""}): the other payload was not refused`);
  else if (a.status !== p.profile.mismatchStatus) problems.push(`answered ${a.status}, expected ${p.profile.mismatchStatus}`);
  if (!successful(a) && a.body === first.final.body) problems.push("the refusal shows the stored answer");
  if (!successful(a)) {
    const form = p.target.errorFormProblem(a);
    if (form) problems.push(`the refusal: ${form}`);
  }
  problems.push(...countChange(before, after, 0, "for the other payload"));
  return verdict(problems, `refused with ${a.status}, nothing ran`);
}

export async function missingKey(p: Probe): Promise<Outcome> {
  const expected = p.profile.missingKeyStatus;
  if (expected === undefined) return { skip: `the ${p.profile.name} profile makes the key optional: a request without one simply runs` };
  const before = await p.count("count before");
  const x = await p.send("no Idempotency-Key", p.target.post(undefined));
  const after = await p.count("count after");
  const a = x.answer;
  if (!a) return { pass: false, summary: `without a key: ${brief(x)}` };
  const problems: string[] = [];
  if (a.status !== expected) problems.push(`answered ${a.status}, expected ${expected}`);
  const form = a.status === expected ? p.target.errorFormProblem(a) : undefined;
  if (form) problems.push(form);
  problems.push(...countChange(before, after, 0, "for a request without a key"));
  return verdict(problems, `${a.status}, nothing ran`);
}

export async function keyFormat(p: Probe): Promise<Outcome> {
  const problems: string[] = [];
  const before = await p.count("count before");
  for (const bad of p.profile.badKeys) {
    const x = await p.send(`key: ${bad.why}`, p.target.post(bad.value));
    if (x.answer?.status !== 400) problems.push(`a key with ${bad.why} answered ${x.answer ? x.answer.status : brief(x)}, expected 400`);
  }
  const mid = await p.count("count after the refused keys");
  problems.push(...countChange(before, mid, 0, "for refused keys"));
  if (p.profile.quotedKeyIsSameKey) {
    const key = p.target.newKey();
    const first = await p.establish("bare key", key);
    if ("problem" in first) return { pass: false, summary: first.problem };
    const counted = await p.count("count before the sf-string form");
    const x = await p.send("the same key as an sf-string", p.target.post(sfString(key)));
    const after = await p.count("count after the sf-string form");
    const a: Answer | undefined = x.answer;
    if (!a) problems.push(`the sf-string form: ${brief(x)}`);
    else if (a.status === 400) problems.push("the sf-string form of the key was refused (400)");
    else if (counted !== undefined && after !== undefined) problems.push(...countChange(counted, after, 0, "for the sf-string form: it ran as another key"));
    else if (successful(a) && !sameAnswer(a, first.final)) problems.push("the sf-string form got a new answer: it ran as another key");
    if (a && !sameAnswer(a, first.final)) p.note(`the sf-string form answered ${a.status} (not the stored answer)`);
  }
  const names = p.profile.badKeys.map((b) => b.why).join(", ");
  return verdict(problems, `400 for ${names}${p.profile.quotedKeyIsSameKey ? '; "key" names the same key as key' : ""}`);
}

export async function scope(p: Probe): Promise<Outcome> {
  const other = p.target.options.otherHeaders;
  if (other.length === 0) return { skip: "needs --other-header (a second credential)" };
  const key = p.target.newKey();
  const first = await p.establish("first credential", key);
  if ("problem" in first) return { pass: false, summary: first.problem };
  const before = await p.count("count (first credential) before");
  const x = await p.send("same key and payload, second credential", p.target.postKey(key, undefined, other));
  const after = await p.count("count (first credential) after");
  const a = x.answer;
  if (!a) return { pass: false, summary: `the second credential: ${brief(x)}` };
  const problems: string[] = [];
  if (a.body === first.final.body) problems.push("the second credential received the first one's stored answer");
  else if (p.target.marked(a)) problems.push("the second credential's answer is marked as a replay");
  if (!successful(a)) problems.push(`the second credential was answered ${a.status}: the same key under another credential must run as an operation of its own`);
  problems.push(...countChange(before, after, 0, "under the first credential"));
  return verdict(problems, `the second credential ran its own operation (${a.status}, another answer)`);
}

export async function expiry(p: Probe): Promise<Outcome> {
  const ttl = p.target.options.ttlSeconds;
  if (ttl === undefined) return { skip: "needs --ttl (the server's key retention, in seconds)" };
  const key = p.target.newKey();
  const first = await p.establish("first request", key);
  if ("problem" in first) return { pass: false, summary: first.problem };
  const before = await p.count("count before");
  // A second past the retention, so clocks a little apart still agree it has passed.
  await sleep(ttl * 1000 + 1000);
  const x = await p.send(`same key ${ttl + 1} s later`, p.target.postKey(key));
  const after = await p.count("count after");
  const a = x.answer;
  if (!a) return { pass: false, summary: `after the TTL: ${brief(x)}` };
  const problems: string[] = [];
  if (sameAnswer(a, first.final) || p.target.marked(a)) problems.push(`replayed ${ttl + 1} s later: the key did not expire`);
  else if (!successful(a)) problems.push(`answered ${a.status} after the TTL, expected the operation to run anew`);
  problems.push(...countChange(before, after, 1, "after the TTL"));
  return verdict(problems, `ran anew after ${ttl + 1} s (${a.status}, a new answer)`);
}
