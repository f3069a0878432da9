/** What the kit is told, what it sends and sees, and what it concludes. */

export const PROFILE_NAMES = ["core", "ietf", "stripe", "exactly-once"] as const;
export type ProfileName = (typeof PROFILE_NAMES)[number];

export const CHECKS = ["replay", "mismatch", "burst", "in-flight", "missing-key", "key-format", "scope", "expiry"] as const;
export type CheckName = (typeof CHECKS)[number];

export const Verdict = { Pass: "pass", Fail: "fail", Skip: "skip" } as const;
export type Verdict = (typeof Verdict)[keyof typeof Verdict];

/**
 * Why a check failed. Unsafe: a second execution, another credential's answer
 * or effect, a stored answer lost or altered, an expired key that never runs
 * again. A deviation: the form differs from the profile's (status codes,
 * headers, body format, key syntax); the operation itself ran once.
 */
export const FailureKind = { Unsafe: "unsafe", Deviation: "deviation" } as const;
export type FailureKind = (typeof FailureKind)[keyof typeof FailureKind];
export type Finding = { kind: FailureKind; text: string };

export type Header = [name: string, value: string];

export type CheckOptions = {
  /** The endpoint that creates something; POSTed to. */
  url: string;
  /** The JSON payload (its text, sent as given). */
  data: string;
  /** A payload that differs; derived from `data` when absent. */
  dataAlt?: string;
  /** Sent with every request, the count included (credentials, say). */
  headers: Header[];
  /** A second credential: these replace the same-named `headers` for the scope check. */
  otherHeaders: Header[];
  /** A GET that counts what the endpoint creates. */
  countUrl?: string;
  /** Whether --count-url counts the caller's resources or everyone's; found out from both credentials' counts when absent. */
  countScope?: CountScope;
  /** The endpoint is a tRPC mutation (its HTTP form, no batching, no transformer). */
  trpc: boolean;
  profile: ProfileName;
  /** Requests released together in the burst check. */
  burst: number;
  /** The server's key retention in seconds; enables the expiry check. */
  ttlSeconds?: number;
  /** Per-request timeout. */
  timeoutMs: number;
};

export type CountScope = "credential" | "global";

export type SentRequest = { method: string; url: string; headers: Record<string, string>; body?: string };
export type Answer = { status: number; headers: Record<string, string>; body: string };

/** One request and its answer (or the error that stood for one), timed. */
export type Exchange = {
  label: string;
  request: SentRequest;
  /** Wall clock when the request started. */
  startedAt: string;
  /** Milliseconds from the kit's start when the request went out and when its answer was complete. */
  sentMs: number;
  answeredMs: number;
  answer?: Answer;
  error?: string;
};

export type CheckResult = {
  name: CheckName;
  verdict: Verdict;
  /** For a failed check: unsafe when any finding is, else a deviation. */
  failure?: FailureKind;
  /** One line: why it passed, failed or was skipped. */
  summary: string;
  /** What failed, each finding with its kind (empty unless the check failed). */
  findings: Finding[];
  /** What was looked at, one line each. */
  details: string[];
  exchanges: Exchange[];
  ms: number;
};

export type Report = {
  target: string;
  profile: ProfileName;
  trpc: boolean;
  startedAt: string;
  ms: number;
  checks: CheckResult[];
};

/** Raised for what the user must fix (a bad option, a server that cannot be reached): one line, exit 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** The setup does not work (a refused credential or payload, a count that is not one): found by the first requests, before any check. */
export class SetupError extends UsageError {
  override name = "SetupError";
}
