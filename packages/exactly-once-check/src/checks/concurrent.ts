/** The checks that need overlap: a burst behind a barrier, and duplicates while the first request runs. */
import { brief, sameAnswer, successful } from "../target.js";
import type { Answer, Exchange, Finding } from "../types.js";
import { deviation, failed, sleep, unsafe, verdict, type Outcome, type Probe } from "./probe.js";
import { countChange, firstDifference } from "./sequential.js";

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
  p.note(
    `${n} requests on ${n} connections, bodies released within ${(Math.max(...sent) - Math.min(...sent)).toFixed(1)} ms: ${tally(xs)}`,
  );
  const successes = xs.filter((x) => successful(x.answer)).map((x) => x.answer as Answer);
  const findings: Finding[] = [];
  if (successes.length === 0) findings.push(deviation(`no request succeeded (${tally(xs)})`));
  const distinct = [...new Set(successes.map((a) => `${a.status} ${a.body}`))];
  if (distinct.length > 1)
    findings.push(
      unsafe(
        `${distinct.length} different successful answers (it ran more than once) ${firstDifference(successes[0]!.body, successes.find((a) => !sameAnswer(a, successes[0]))!.body)}`,
      ),
    );
  findings.push(...countChange(before, after, 1, "for the burst (one key)"));
  return verdict(findings, `one execution: every success identical (${tally(xs)})${before !== undefined ? ", count +1" : ""}`);
}

/** Where duplicates go out, as fractions of how long a fresh request takes. */
const OFFSETS = [0.2, 0.4, 0.6];
const ROUNDS = 3;

export async function inFlight(p: Probe): Promise<Outcome> {
  const before = await p.count("count before");
  const calibration = await p.establish("calibration (a fresh key)", p.target.newKey());
  if ("problem" in calibration) return failed(calibration.problem);
  const timed = p.exchanges.at(-1)!;
  const duration = timed.answeredMs - timed.sentMs;
  p.note(`a fresh request took ${duration.toFixed(1)} ms; duplicates go out at ${OFFSETS.map((f) => `${f * 100}%`).join(", ")} of that`);
  const findings: Finding[] = [];
  let overlapped = 0;
  let rounds = 0;
  while (rounds < ROUNDS && overlapped === 0 && findings.length === 0) {
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
      findings.push(deviation(`round ${rounds}: the first request: ${brief(first)}`));
      break;
    }
    for (const d of dups) {
      const during = d.sentMs < first.answeredMs;
      if (during) overlapped++;
      const a = d.answer;
      if (!a) findings.push(deviation(`${d.label}: ${brief(d)}`));
      else if (p.profile.conflictStatus === undefined ? a.status >= 400 && a.status < 500 : a.status === p.profile.conflictStatus) {
        const form = p.target.errorFormProblem(a);
        if (form) findings.push(deviation(`${d.label}: the ${a.status}: ${form}`));
        const retryAfter = a.headers["retry-after"];
        if (p.profile.conflictRetryAfter && !(retryAfter && /^\d+$/.test(retryAfter) && Number(retryAfter) >= 1))
          findings.push(deviation(`${d.label}: the 409 has no Retry-After of whole seconds ≥ 1 (${retryAfter ?? "none"})`));
      } else if (!sameAnswer(a, first.answer)) {
        const text = `${d.label} (${during ? "while the first ran" : "after the first answered"}): ${a.status}, neither a ${p.profile.conflictStatus ?? "4xx refusal"} nor the first's answer`;
        // Another success is a second execution; a refusal of another kind is only a different form.
        findings.push(successful(a) ? unsafe(`${text}: it ran again`) : deviation(text));
      }
      p.note(`${d.label}: ${brief(d)}${during ? ", sent while the first ran" : ", sent after the first answered"}`);
    }
  }
  const after = await p.count("count after");
  findings.push(...countChange(before, after, 1 + rounds, "(one per key)"));
  if (findings.length === 0 && overlapped === 0)
    return { skip: `no duplicate reached the server while a first request ran (a fresh request takes ${duration.toFixed(1)} ms)` };
  return verdict(
    findings,
    `${overlapped} duplicate(s) while the first ran: each a ${p.profile.conflictStatus ?? "refusal"} or the first's answer, none ran`,
  );
}
