/**
 * The kit against the gallery: each deliberately broken server fails exactly
 * the check meant for its flaw, tagged unsafe or a deviation (the whole
 * verdict vector is asserted); the correct one passes every check; servers
 * of another correct form pass the `core` profile and fail stricter ones on
 * form only, never as unsafe.
 */
import { afterEach, describe, expect, it } from "vitest";
import { checkOptions, runChecks, type CheckName, type FailureKind, type ProfileName, type Verdict } from "../src/index";
import { startGalleryServer, type Flaw, type GalleryOptions } from "./gallery";

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
/** The check each flaw must fail (under the exactly-once profile), how, and what its evidence must say. */
const CAUGHT_BY: Record<Flaw, [CheckName, FailureKind, RegExp]> = {
  race: ["burst", "unsafe", /different successful answers .*expected \+1/],
  "no-fingerprint": ["mismatch", "unsafe", /a silent success \(201, the first payload's stored answer\)/],
  "byte-fingerprint": [
    "replay",
    "deviation",
    /the same payload with its fields reordered was refused \(422\): the fingerprint is over bytes/,
  ],
  "generic-duplicate": ["replay", "unsafe", /the replay answered 409, the first 201/],
  "re-render": ["replay", "unsafe", /the replay's body differs from the first answer's from byte/],
  "shared-keys": ["scope", "unsafe", /the second credential received the first one's stored answer/],
  "cached-5xx": ["replay", "deviation", /a 502 came back as the key's stored answer \(marked as a replay\)/],
  "no-in-flight": ["in-flight", "deviation", /duplicate at \d+% \(while the first ran\): 500, neither a 409 nor the first's answer/],
  "never-expires": ["expiry", "unsafe", /replayed 2 s later: the key did not expire/],
};

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

async function verdicts(server: Omit<GalleryOptions, "ttlMs">, profile: ProfileName) {
  const running = await startGalleryServer({ ...server, ttlMs: TTL_S * 1000 });
  stop = running.stop;
  const report = await runChecks(
    checkOptions({
      url: running.url,
      data: '{"amount":"1.00","currency":"EUR","destination":"acct_1"}',
      headers: [["Authorization", "Bearer first"]],
      otherHeaders: [["Authorization", "Bearer second"]],
      countUrl: running.url,
      ttlSeconds: TTL_S,
      profile,
    }),
  );
  const vector = Object.fromEntries(report.checks.map((c) => [c.name, c.verdict]));
  const why = JSON.stringify(report.checks.map((c) => [c.name, c.failure, c.summary]));
  return { report, vector, why };
}

describe("the gallery", () => {
  it("a correct server passes every check, and the provider's blip is retried, not taken for its answer", async () => {
    const { report, vector, why } = await verdicts({}, "exactly-once");
    expect(vector, why).toEqual(ALL_PASS);
    expect(report.checks[0]!.details.join("\n")).toMatch(/502 on attempt 1, not final/);
  });

  for (const profile of ["core", "ietf", "stripe"] as const)
    it(`a correct server: no unsafe finding under ${profile}, and a transient 5xx does not fail replay`, async () => {
      const { report, vector, why } = await verdicts({}, profile);
      expect(vector.replay, why).toBe("pass");
      expect(
        report.checks.filter((c) => c.failure === "unsafe"),
        why,
      ).toEqual([]);
      if (profile === "core") expect(vector, why).toEqual({ ...ALL_PASS, "key-format": "skip" });
    });

  it("a correct server of minimal form (a title-only error body, any key up to 255, a quoted key is another) passes core and deviates only in form under exactly-once", async () => {
    const core = await verdicts({ minimal: true }, "core");
    expect(core.vector, core.why).toEqual({ ...ALL_PASS, "key-format": "skip" });
    await stop?.();
    const strict = await verdicts({ minimal: true }, "exactly-once");
    const failed = strict.report.checks.filter((c) => c.verdict === "fail");
    expect(failed.map((c) => c.name).sort(), strict.why).toEqual(["in-flight", "key-format", "mismatch", "missing-key"]);
    expect(
      failed.every((c) => c.failure === "deviation"),
      strict.why,
    ).toBe(true);
  });

  it("a --count-url that counts every credential's payments: scope finds that out and passes", async () => {
    const { report, vector, why } = await verdicts({ count: "global" }, "exactly-once");
    expect(vector, why).toEqual(ALL_PASS);
    expect(report.checks.find((c) => c.name === "scope")!.details.join("\n")).toMatch(/counts every credential's resources/);
  });

  for (const [flaw, [check, kind, evidence]] of Object.entries(CAUGHT_BY) as [Flaw, [CheckName, FailureKind, RegExp]][]) {
    it(`${flaw}: fails ${check} (${kind}), and only ${check}`, async () => {
      const { report, vector, why } = await verdicts({ flaw }, "exactly-once");
      expect(vector, why).toEqual({ ...ALL_PASS, [check]: "fail" });
      const failed = report.checks.find((c) => c.name === check)!;
      expect(failed.summary).toMatch(evidence);
      expect(failed.failure, why).toBe(kind);
    });
  }

  for (const [flaw, [check]] of (Object.entries(CAUGHT_BY) as [Flaw, [CheckName, FailureKind, RegExp]][]).filter(
    ([, [, kind]]) => kind === "unsafe",
  )) {
    it(`${flaw}: core catches it too, as unsafe`, async () => {
      const { report, why } = await verdicts({ flaw }, "core");
      expect(report.checks.find((c) => c.name === check)!.failure, why).toBe("unsafe");
    });
  }
});
