/**
 * The checks that need no overlap: replay, mismatch, missing-key,
 * key-format, scope and expiry. Each uses keys of its own.
 */
import { sfString } from "../profiles.js";
import { brief, reordered, sameAnswer, successful } from "../target.js";
import type { Finding } from "../types.js";
import { deviation, failed, sleep, unsafe, verdict, type Outcome, type Probe } from "./probe.js";

/** Where two bodies part, for the evidence. */
export function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const cut = (s: string) => JSON.stringify(s.slice(Math.max(0, i - 12), i + 24));
  return `from byte ${i}: ${cut(a)} vs ${cut(b)}`;
}

/**
 * A count that moved otherwise than `expected`: more is unsafe (something
 * ran that should not have), fewer a deviation (what should have run did
 * not show in the count).
 */
export function countChange(before: number | undefined, after: number | undefined, expected: number, what: string): Finding[] {
  if (before === undefined || after === undefined || after - before === expected) return [];
  const text = `--count-url went ${before} → ${after} ${what}, expected ${expected === 0 ? "no change" : `+${expected}`}`;
  return [after - before > expected ? unsafe(text) : deviation(text)];
}

export async function replay(p: Probe): Promise<Outcome> {
  const before = await p.count("count before");
  const first = await p.establish("first request", p.target.newKey());
  if ("problem" in first) return failed(first.problem);
  const { key } = first;
  const x = await p.send("same key, same payload", p.target.postKey(key));
  const a = x.answer;
  if (!a) return failed(deviation(`the replay: ${brief(x)}`));
  const findings: Finding[] = [];
  if (a.status !== first.final.status)
    findings.push(unsafe(`the replay answered ${a.status}, the first ${first.final.status}: the stored answer was lost`));
  else if (a.body !== first.final.body)
    findings.push(unsafe(`the replay's body differs from the first answer's ${firstDifference(first.final.body, a.body)}`));
  const marker = p.profile.replayMarker;
  if (marker && !p.target.marked(a)) findings.push(deviation(`the replay lacks ${marker[0]}: ${marker[1]}`));
  if (marker && p.target.marked(first.final)) findings.push(deviation(`the first answer is marked ${marker[0]}: ${marker[1]}`));
  // The same payload as other bytes: fields in another order, other whitespace. The same request by its meaning.
  const other = reordered(p.target.options.data);
  if (other !== undefined) {
    const r = await p.send("same key, the payload's fields reordered", p.target.postKey(key, other));
    p.note(`reordered payload: ${other}`);
    const b = r.answer;
    if (!b) findings.push(deviation(`the reordered payload: ${brief(r)}`));
    // With a count, the count says whether it ran again (below); without one, a new answer is all there is to go by.
    else if (successful(b) && !sameAnswer(b, first.final) && before === undefined)
      findings.push(
        unsafe(`the same payload with its fields reordered got a new answer (${b.status}): it ran again, or the stored answer was altered`),
      );
    else if (!successful(b) && b.status !== first.final.status)
      findings.push(
        deviation(`the same payload with its fields reordered was refused (${b.status}): the fingerprint is over bytes, not meaning`),
      );
  }
  const after = await p.count("count after");
  findings.push(...countChange(before, after, 1, "for a request and its replays"));
  return verdict(
    findings,
    `${a.status} and ${Buffer.byteLength(a.body)} bytes identical${other !== undefined ? ", the reordered payload too" : ""}${marker ? `, ${marker[0]}: ${marker[1]}` : ""}`,
  );
}

export async function mismatch(p: Probe): Promise<Outcome> {
  const first = await p.establish("first request", p.target.newKey());
  if ("problem" in first) return failed(first.problem);
  const before = await p.count("count before");
  const x = await p.send("same key, other payload", p.target.postKey(first.key, p.target.alt));
  const after = await p.count("count after");
  p.note(`other payload: ${p.target.alt}`);
  const a = x.answer;
  if (!a) return failed(deviation(`the other payload: ${brief(x)}`));
  const findings: Finding[] = [];
  const expected = p.profile.mismatchStatus;
  if (successful(a))
    findings.push(
      unsafe(
        `a silent success (${a.status}${sameAnswer(a, first.final) ? ", the first payload's stored answer" : ""}): the other payload was not refused, and its client is told it succeeded`,
      ),
    );
  else if (expected === undefined ? a.status < 400 || a.status > 499 : a.status !== expected)
    findings.push(deviation(`answered ${a.status}, expected ${expected ?? "a 4xx"}`));
  if (!successful(a) && a.body === first.final.body) findings.push(deviation("the refusal shows the stored answer"));
  if (!successful(a)) {
    const form = p.target.errorFormProblem(a);
    if (form) findings.push(deviation(`the refusal: ${form}`));
  }
  findings.push(...countChange(before, after, 0, "for the other payload"));
  return verdict(findings, `refused with ${a.status}, nothing ran`);
}

export async function missingKey(p: Probe): Promise<Outcome> {
  const rule = p.profile.missingKey;
  if (rule === "optional") return { skip: `the ${p.profile.name} profile makes the key optional: a request without one simply runs` };
  const before = await p.count("count before");
  const x = await p.send("no Idempotency-Key", p.target.post(undefined));
  const after = await p.count("count after");
  const a = x.answer;
  if (!a) return failed(deviation(`without a key: ${brief(x)}`));
  if (rule === "reported") {
    // Either is fine here; only a refusal that still ran something is not.
    if (successful(a))
      return verdict(
        countChange(before, after, 1, "for a request without a key"),
        `keys are optional here: a request without one ran (${a.status})`,
      );
    if (a.status >= 400 && a.status < 500)
      return verdict(
        countChange(before, after, 0, "for a refused request without a key"),
        `keys are required here: refused with ${a.status}, nothing ran`,
      );
    return failed(deviation(`without a key: answered ${a.status}, neither a success nor a refusal`));
  }
  const findings: Finding[] = [];
  if (a.status !== rule) findings.push(deviation(`answered ${a.status}, expected ${rule}`));
  const form = a.status === rule ? p.target.errorFormProblem(a) : undefined;
  if (form) findings.push(deviation(form));
  findings.push(...countChange(before, after, successful(a) ? 1 : 0, "for a request without a key"));
  return verdict(findings, `${a.status}, nothing ran`);
}

export async function keyFormat(p: Probe): Promise<Outcome> {
  if (p.profile.badKeys.length === 0 && !p.profile.quotedKeyIsSameKey)
    return { skip: `the ${p.profile.name} profile does not judge key syntax` };
  const findings: Finding[] = [];
  const before = await p.count("count before");
  let accepted = 0;
  for (const bad of p.profile.badKeys) {
    const x = await p.send(`key: ${bad.why}`, p.target.post(bad.value));
    if (successful(x.answer)) accepted++;
    if (x.answer?.status !== 400)
      findings.push(deviation(`a key with ${bad.why} answered ${x.answer ? x.answer.status : brief(x)}, expected 400`));
  }
  const mid = await p.count("count after the refused keys");
  // A key the server accepted ran its request; a refused one must not have.
  findings.push(...countChange(before, mid, accepted, "for the refused keys"));
  if (p.profile.quotedKeyIsSameKey) {
    const first = await p.establish("bare key", p.target.newKey());
    if ("problem" in first) return failed(first.problem);
    const counted = await p.count("count before the sf-string form");
    const x = await p.send("the same key as an sf-string", p.target.post(sfString(first.key)));
    const after = await p.count("count after the sf-string form");
    const a = x.answer;
    if (!a) findings.push(deviation(`the sf-string form: ${brief(x)}`));
    else if (a.status === 400) findings.push(deviation("the sf-string form of the key was refused (400)"));
    else if (counted !== undefined && after !== undefined) {
      if (after !== counted)
        findings.push(deviation(`--count-url went ${counted} → ${after} for the sf-string form: it ran as another key`));
    } else if (successful(a) && !sameAnswer(a, first.final))
      findings.push(deviation("the sf-string form got a new answer: it ran as another key"));
    if (a && !sameAnswer(a, first.final)) p.note(`the sf-string form answered ${a.status} (not the stored answer)`);
  }
  const names = p.profile.badKeys.map((b) => b.why).join(", ");
  return verdict(
    findings,
    [names && `400 for ${names}`, p.profile.quotedKeyIsSameKey && '"key" names the same key as key'].filter(Boolean).join("; "),
  );
}

/**
 * The same key under a second credential must be an operation of its own.
 * The count is read under both credentials: equal under both, it counts
 * everyone's resources (the second credential's run adds one to it);
 * otherwise each credential's own (the first's must not move).
 */
export async function scope(p: Probe): Promise<Outcome> {
  const other = p.target.options.otherHeaders;
  if (other.length === 0) return { skip: "needs --other-header (a second credential)" };
  const first = await p.establish("first credential", p.target.newKey());
  if ("problem" in first) return failed(first.problem);
  const before = {
    mine: await p.count("count (first credential) before"),
    theirs: await p.count("count (second credential) before", other),
  };
  const x = await p.send("same key and payload, second credential", p.target.postKey(first.key, undefined, other));
  const after = { mine: await p.count("count (first credential) after"), theirs: await p.count("count (second credential) after", other) };
  const a = x.answer;
  if (!a) return failed(deviation(`the second credential: ${brief(x)}`));
  const findings: Finding[] = [];
  if (a.body === first.final.body) findings.push(unsafe("the second credential received the first one's stored answer"));
  else if (p.target.marked(a)) findings.push(unsafe("the second credential's answer is marked as a replay"));
  if (a.status >= 400 && a.status < 500)
    findings.push(
      unsafe(
        `the second credential was refused (${a.status}) because the first used the key: the same key under another credential must run as an operation of its own`,
      ),
    );
  else if (!successful(a)) findings.push(deviation(`the second credential was answered ${a.status}`));
  if (before.mine !== undefined && after.mine !== undefined) {
    const global = p.target.options.countScope
      ? p.target.options.countScope === "global"
      : before.mine === before.theirs && after.mine === after.theirs;
    p.note(
      `--count-url counts ${global ? "every credential's resources (the same under both)" : "each credential's own resources"}${p.target.options.countScope ? " (--count-scope)" : ""}`,
    );
    const ran = successful(a) ? 1 : 0;
    if (global) findings.push(...countChange(before.mine, after.mine, ran, "for the second credential's request"));
    else {
      findings.push(
        ...countChange(before.mine, after.mine, 0, "under the first credential for the second credential's request").map((f) =>
          unsafe(f.text),
        ),
      );
      findings.push(...countChange(before.theirs, after.theirs, ran, "under the second credential"));
    }
  }
  return verdict(findings, `the second credential ran its own operation (${a.status}, another answer)`);
}

export async function expiry(p: Probe): Promise<Outcome> {
  const ttl = p.target.options.ttlSeconds;
  if (ttl === undefined) return { skip: "needs --ttl (the server's key retention, in seconds)" };
  const first = await p.establish("first request", p.target.newKey());
  if ("problem" in first) return failed(first.problem);
  const before = await p.count("count before");
  // A second past the retention, so clocks a little apart still agree it has passed.
  await sleep(ttl * 1000 + 1000);
  const x = await p.send(`same key ${ttl + 1} s later`, p.target.postKey(first.key));
  const after = await p.count("count after");
  const a = x.answer;
  if (!a) return failed(deviation(`after the TTL: ${brief(x)}`));
  const findings: Finding[] = [];
  if (sameAnswer(a, first.final) || p.target.marked(a)) findings.push(unsafe(`replayed ${ttl + 1} s later: the key did not expire`));
  else if (!successful(a)) findings.push(deviation(`answered ${a.status} after the TTL, expected the operation to run anew`));
  findings.push(...countChange(before, after, 1, "after the TTL"));
  return verdict(findings, `ran anew after ${ttl + 1} s (${a.status}, a new answer)`);
}
