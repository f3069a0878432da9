/** exactly-once-check as a library: run the checks from a test suite and assert on the report. */
export { runChecks, assertReachable, checkOptions, type Progress } from "./run";
export { toJunit, xmlEscape } from "./junit";
export { formatTable } from "./table";
export { PROFILES, type Profile } from "./profiles";
export { derivePayload, readCount } from "./target";
export { CHECKS, UsageError, Verdict, type CheckName, type CheckOptions, type CheckResult, type Exchange, type Header, type ProfileName, type Report } from "./types";
