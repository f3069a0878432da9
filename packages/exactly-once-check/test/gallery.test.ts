/**
 * The kit against the gallery: each deliberately broken server fails exactly
 * the check meant for its flaw (the whole verdict vector is asserted), and
 * the correct one passes every check.
 */
import { afterEach, describe, expect, it } from "vitest";
import { checkOptions, runChecks, type CheckName, type Verdict } from "../src/index";
import { startGalleryServer, type Flaw } from "./gallery";

const TTL_S = 1;
const ALL_PASS: Record<CheckName, Verdict> = {
  replay: "pass",
  mismatch: "pass",
  burst: "pass",
  "in-flight": "pass",
  "missing-key": "pass",
  "key-format": "pass",
  scope: "pass",
  expiry: "pass",
};
/** The check each flaw must fail, and what its evidence must say. */
const CAUGHT_BY: Record<Flaw, [CheckName, RegExp]> = {
  race: ["burst", /different successful answers .*expected exactly one new resource/],
  "no-fingerprint": ["mismatch", /a silent success \(201, the first payload's stored answer\)/],
  "generic-duplicate": ["replay", /the replay answered 409, the first 201/],
  "re-render": ["replay", /the replay's body differs from the first answer's from byte/],
  "shared-keys": ["scope", /the second credential received the first one's stored answer/],
  "cached-5xx": ["replay", /a 502 came back as the key's stored answer \(marked as a replay\)/],
  "no-in-flight": ["in-flight", /duplicate at \d+% \(while the first ran\): 500, neither a 409 nor the first's answer/],
  "never-expires": ["expiry", /replayed 2 s later: the key did not expire/],
};

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

async function verdicts(flaw?: Flaw) {
  const server = await startGalleryServer({ flaw, ttlMs: TTL_S * 1000 });
  stop = server.stop;
  const report = await runChecks(
    checkOptions({
      url: server.url,
      data: '{"amount":"1.00","currency":"EUR","destination":"acct_1"}',
      headers: [["Authorization", "Bearer first"]],
      otherHeaders: [["Authorization", "Bearer second"]],
      countUrl: server.url,
      ttlSeconds: TTL_S,
    }),
  );
  const vector = Object.fromEntries(report.checks.map((c) => [c.name, c.verdict]));
  return { report, vector };
}

describe("the gallery", () => {
  it("a correct server passes every check", async () => {
    const { report, vector } = await verdicts();
    expect(vector, JSON.stringify(report.checks.map((c) => [c.name, c.summary]))).toEqual(ALL_PASS);
    // The blip was met and not taken for the final answer.
    expect(report.checks[0]!.details.join("\n")).toMatch(/502 on attempt 1, not final/);
  });

  for (const [flaw, [check, evidence]] of Object.entries(CAUGHT_BY) as [Flaw, [CheckName, RegExp]][]) {
    it(`${flaw}: fails ${check}, and only ${check}`, async () => {
      const { report, vector } = await verdicts(flaw);
      expect(vector, JSON.stringify(report.checks.map((c) => [c.name, c.summary]))).toEqual({ ...ALL_PASS, [check]: "fail" });
      expect(report.checks.find((c) => c.name === check)!.summary).toMatch(evidence);
    });
  }
});
