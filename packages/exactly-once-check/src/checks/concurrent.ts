/** The checks that need overlap: a burst behind a barrier, and duplicates while the first request runs. */
import { brief, sameAnswer, successful } from "../target";
import type { Answer, Exchange } from "../types";
import type { Outcome, Probe } from "./probe";
import { firstDifference, verdict } from "./sequential";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const tally = (xs: Exchange[]) => {
  const by = new Map<string, number>();
  for (const x of xs) {
    const k = x.answer ? String(x.answer.status) : "no answer";
    by.set(k, (by.get(k) ?? 0) + 1);
  }
  return [...by].map(([k, n]) => `${k} ×${n}`).join(", ");
};

export async function burst(p: Probe): Promise<Outcome> {
  const n = p.target.options.burst;
  const key = p.target.newKey();
  const before = await p.count("count before");
  const xs = await p.sendTogether(Array.from({ length: n }, (_, i) => ({ label: `burst #${i + 1}`, request: p.target.postKey(key) })));
  const after = await p.count("count after");
  const sent = xs.map((x) => x.sentMs);
  p.note(`${n} requests on ${n} connections, bodies released within ${(Math.max(...sent) - Math.min(...sent)).toFixed(1)} ms: ${tally(xs)}`);
  const successes = xs.filter((x) => successful(x.answer)).map((x) => x.answer as Answer);
  const problems: string[] = [];
  if (successes.length === 0) problems.push(`no request succeeded (${tally(xs)})`);
  const distinct = [...new Set(successes.map((a) => `${a.status} ${a.body}`))];
  if (distinct.length > 1) problems.push(`${distinct.length} different successful answers (it ran more than once) ${firstDifference(successes[0]!.body, successes.find((a) => !sameAnswer(a, successes[0]))!.body)}`);
  if (before !== undefined && after !== undefined && after - before !== 1) problems.push(`--count-url went ${before} → ${after}, expected exactly one new resource`);
  return verdict(problems, `one execution: every success identical (${tally(xs)})${before !== undefined ? ", count +1" : ""}`);
}

/** Where duplicates go out, as fractions of how long a fresh request takes. */
const OFFSETS = [0.2, 0.4, 0.6];
const ROUNDS = 3;

export async function inFlight(p: Probe): Promise<Outcome> {
  const before = await p.count("count before");
  const calibration = await p.establish("calibration (a fresh key)", p.target.newKey());
  if ("problem" in calibration) return { pass: false, summary: calibration.problem };
  const timed = p.exchanges.at(-1)!;
  const duration = timed.answeredMs - timed.sentMs;
  p.note(`a fresh request took ${duration.toFixed(1)} ms; duplicates go out at ${OFFSETS.map((f) => `${f * 100}%`).join(", ")} of that`);
  const problems: string[] = [];
  let overlapped = 0;
  let rounds = 0;
  while (rounds < ROUNDS && overlapped === 0 && problems.length === 0) {
    rounds++;
    const key = p.target.newKey();
    const start = p.target.clock.now();
    const firstP = p.send(`round ${rounds}: first`, p.target.postKey(key));
    const dupPs: Promise<Exchange>[] = [];
    for (const f of OFFSETS) {
      await sleep(Math.max(0, start + duration * f - p.target.clock.now()));
      dupPs.push(p.send(`round ${rounds}: duplicate at ${f * 100}%`, p.target.postKey(key)));
    }
    const [first, dups] = [await firstP, await Promise.all(dupPs)];
    if (!successful(first.answer)) {
      problems.push(`round ${rounds}: the first request: ${brief(first)}`);
      break;
    }
    for (const d of dups) {
      const during = d.sentMs < first.answeredMs;
      if (during) overlapped++;
      const a = d.answer;
      if (!a) problems.push(`${d.label}: ${brief(d)}`);
      else if (a.status === 409) {
        const form = p.target.errorFormProblem(a);
        if (form) problems.push(`${d.label}: the 409: ${form}`);
        const retryAfter = a.headers["retry-after"];
        if (p.profile.conflictRetryAfter && !(retryAfter && /^\d+$/.test(retryAfter) && Number(retryAfter) >= 1)) problems.push(`${d.label}: the 409 has no Retry-After of whole seconds ≥ 1 (${retryAfter ?? "none"})`);
      } else if (!sameAnswer(a, first.answer)) {
        problems.push(`${d.label} (${during ? "while the first ran" : "after the first answered"}): ${a.status}, neither a 409 nor the first's answer`);
      }
      p.note(`${d.label}: ${brief(d)}${during ? ", sent while the first ran" : ", sent after the first answered"}`);
    }
  }
  const after = await p.count("count after");
  if (before !== undefined && after !== undefined && after - before !== 1 + rounds) problems.push(`--count-url went ${before} → ${after}, expected +${1 + rounds} (one per key): a duplicate ran`);
  if (problems.length === 0 && overlapped === 0) return { skip: `no duplicate reached the server while a first request ran (a fresh request takes ${duration.toFixed(1)} ms)` };
  return verdict(problems, `${overlapped} duplicate(s) while the first ran: each a 409 or the first's answer, none ran`);
}
