/** What the kit is told, what it sends and sees, and what it concludes. */

export type ProfileName = "ietf" | "stripe" | "exactly-once";

export const CHECKS = ["replay", "mismatch", "burst", "in-flight", "missing-key", "key-format", "scope", "expiry"] as const;
export type CheckName = (typeof CHECKS)[number];

export const Verdict = { Pass: "pass", Fail: "fail", Skip: "skip" } as const;
export type Verdict = (typeof Verdict)[keyof typeof Verdict];

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
  /** One line: why it passed, failed or was skipped. */
  summary: string;
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
